package benchrun

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main is the main of every benchmark program: parse the flags (exit 2 on a
// bad one, 0 for -h), build knowngood and loadgen, then run until done or
// interrupted (exit 1 on an error), every message prefixed with name.
func Main[O any](name string, parse func([]string) (O, error), run func(context.Context, O, *Binaries, io.Writer, io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts, err := parse(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		stop()
		os.Exit(2)
	}
	bins, err := Build(os.Stderr)
	if err == nil {
		err = run(ctx, opts, bins, os.Stdout, os.Stderr)
		bins.Remove()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		stop()
		os.Exit(1)
	}
}
