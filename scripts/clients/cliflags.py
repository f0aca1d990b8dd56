"""The command-line handling the Python client scripts share.

A bad argument prints "PROG: what was wrong" to stderr and exits 2, as
every knowngood command does (argparse's own exit is 2 too, but it prints
the whole usage first).
"""

import argparse
import sys


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message):
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(2)


def positive_int(limit):
    """An argparse type: an integer from 1 to limit."""

    def parse(s):
        if not s.isdigit() or not 1 <= int(s) <= limit:
            raise argparse.ArgumentTypeError(f"want an integer from 1 to {limit}")
        return int(s)

    return parse
