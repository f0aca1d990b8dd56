// Package flagset holds what every loadgen scenario does with its flags:
// parse them into one-line errors, and print them for -h.
package flagset

import (
	"flag"
	"fmt"
	"io"
)

// Parse parses args with fs (whose output should be io.Discard: the error
// is returned, one line, for the caller to print) and reports which flags
// were given. A positional argument is an error: every setting is a flag.
func Parse(fs *flag.FlagSet, args []string) (set map[string]bool, err error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: every setting is a flag", fs.Arg(0))
	}
	set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set, nil
}

// Usage prints "usage: loadgen SCENARIO [flags]" and fs's flags.
func Usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: loadgen %s [flags]\n", fs.Name())
	fs.SetOutput(w)
	fs.PrintDefaults()
}
