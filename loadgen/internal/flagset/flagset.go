// Package flagset holds what every loadgen scenario does with its flags:
// define the numeric ones with their bounds and the others with the
// function that parses them, parse them into one-line errors, and print
// them for -h.
package flagset

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"
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

// Int defines an integer flag from lo to hi, with def as its default.
func Int(fs *flag.FlagSet, p *int, name string, def, lo, hi int, usage string) {
	*p = def
	fs.Func(name, fmt.Sprintf("%s, %d to %d (default %d)", usage, lo, hi, def), func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("want an integer from %d to %d", lo, hi)
		}
		*p = n
		return nil
	})
}

// Duration defines a duration flag with def as its default; zero is
// allowed when zeroOK, a negative duration never.
func Duration(fs *flag.FlagSet, p *time.Duration, name string, def time.Duration, zeroOK bool, usage string) {
	*p = def
	fs.Func(name, fmt.Sprintf("%s (default %s)", usage, def), func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || (d == 0 && !zeroOK) {
			if zeroOK {
				return errors.New("want a duration of 0 or more, such as 2s or 500ms")
			}
			return errors.New("want a positive duration such as 10s or 500ms")
		}
		*p = d
		return nil
	})
}

// Value defines a flag whose text parse turns into *p; parse's error is
// the flag's.
func Value[T any](fs *flag.FlagSet, p *T, name, usage string, parse func(string) (T, error)) {
	fs.Func(name, usage, func(s string) error {
		v, err := parse(s)
		if err != nil {
			return err
		}
		*p = v
		return nil
	})
}

// PID defines a flag that names a process on this machine by its id (a
// positive integer); 0, its default, names none.
func PID(fs *flag.FlagSet, p *int, name, usage string) {
	Value(fs, p, name, usage, func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, errors.New("want a process id, a positive integer")
		}
		return n, nil
	})
}
