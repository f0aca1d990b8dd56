package scenario

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/knowngood/knowngood/loadgen/htmlreport"
	"github.com/knowngood/knowngood/loadgen/internal/sidebyside"
	"github.com/knowngood/knowngood/loadgen/internal/threshold"
)

// Command is one loadgen subcommand: parse its flags, run it, print its
// report and write the report's files.
type Command struct {
	Name string
	// Main runs the subcommand with args (its flags) and returns the exit
	// status: 0 pass; 1 the run failed (nothing succeeded, a verdict found
	// a loss, a -threshold crossed, watch's command failed) or could not
	// take place; 2 bad flags; 3 the target could not be reached; 130
	// interrupted (after writing the partial report). See Outcome.
	Main func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// Report is what every subcommand's run returns: a table for the
// terminal, and for -json the report itself, encoded (WriteJSON).
type Report interface {
	WriteTable(io.Writer) error
}

// WriteJSON writes rep as one JSON object and a newline; a report that
// has a WriteJSON of its own writes its JSON with it.
func WriteJSON(w io.Writer, rep Report) error {
	if j, ok := rep.(interface{ WriteJSON(io.Writer) error }); ok {
		return j.WriteJSON(w)
	}
	return sidebyside.WriteJSON(w, rep)
}

// Charted is a report with per-second samples and charts, for -csv and
// -html: every scenario's but watch's (the tool it runs keeps its own).
type Charted interface {
	WriteCSV(io.Writer) error         // the per-second samples
	HTMLRun() (htmlreport.Run, error) // the run, for the -html page
}

// Files are the report's files: -json, -csv and -html ("" for none).
type Files struct{ JSON, CSV, HTML string }

// CommonFiles are the files named by a configuration built on Common.
func CommonFiles[C interface {
	Files() (json, csv, html string)
}](c C) Files {
	json, csv, html := c.Files()
	return Files{json, csv, html}
}

// NewCommand makes the subcommand name from its flag parser, its usage,
// its run (notes for the user go to its io.Writer, stderr) and the files
// its configuration names.
func NewCommand[C any, R Report](name string, parse func([]string) (C, error), usage func(io.Writer),
	run func(context.Context, C, io.Writer) (R, error), filesOf func(C) Files) Command {
	return Command{Name: name, Main: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		cfg, err := parse(args)
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return 0
		}
		if err != nil {
			fmt.Fprintf(stderr, "loadgen %s: %v\n", name, err)
			return 2
		}
		rep, err := run(ctx, cfg, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "loadgen %s: %v\n", name, err)
			if errors.Is(err, ErrUnreachable) {
				return ExitUnreachable
			}
			return ExitFail
		}
		out, results, judged := judge(cfg, rep)
		if err := write(filesOf(cfg), name, rep, results, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "loadgen %s: %v\n", name, err)
			return ExitFail
		}
		if ctx.Err() != nil {
			return ExitInterrupted // the report is partial
		}
		if e, ok := any(rep).(interface{ ExitStatus() int }); ok && e.ExitStatus() != 0 {
			// loadgen watch: the command failed (its status is in the report)
			fmt.Fprintf(stderr, "loadgen %s: failed: the command exited %d\n", name, e.ExitStatus())
			return ExitFail
		}
		if judged {
			return verdictOf(ctx, name, cfg, out, results, stderr)
		}
		return ExitPass
	}}
}

// write prints the table, and writes the files asked for; with -json - the
// JSON goes to stdout and the table to stderr.
func write(f Files, name string, rep Report, results []threshold.Result, stdout, stderr io.Writer) error {
	// The table first: a file that cannot be written loses nothing else.
	table := stdout
	if f.JSON == "-" {
		table = stderr
	}
	if err := rep.WriteTable(table); err != nil {
		return err
	}
	threshold.Write(table, results)
	switch f.JSON {
	case "":
	case "-":
		if err := WriteJSON(stdout, rep); err != nil {
			return err
		}
	default:
		if err := writeFile(f.JSON, func(w io.Writer) error { return WriteJSON(w, rep) }); err != nil {
			return err
		}
	}
	c, ok := rep.(Charted)
	if !ok {
		return nil
	}
	if f.CSV != "" {
		if err := writeFile(f.CSV, c.WriteCSV); err != nil {
			return err
		}
	}
	if f.HTML != "" {
		run, err := c.HTMLRun()
		if err != nil {
			return err
		}
		return writeFile(f.HTML, func(w io.Writer) error {
			return htmlreport.WriteHTML(w, "loadgen "+name, []htmlreport.Run{run})
		})
	}
	return nil
}

// writeFile creates path and writes it with fn.
func writeFile(path string, fn func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
