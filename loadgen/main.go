// Command loadgen is knowngood's reference load client.
//
//	loadgen handshake -url http://127.0.0.1:8080 -n 500 -deadline 15s -transport websocket
//
// opens 500 Socket.IO connections at once and prints how many completed the
// namespace CONNECT, how fast, and what the server saw (see
// loadgen/handshake). Exit status: 0 when the run took place (the report
// tells how it went), 1 when it could not, 2 for bad flags, 130 when
// interrupted (after printing the partial report).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"knowngood/loadgen/handshake"
)

func main() {
	// The zishang520 engine.io client catches SIGINT and SIGTERM itself
	// (and then does not exit): stop the run on them here.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "handshake" {
		fmt.Fprintln(stderr, "usage: loadgen handshake [flags] (loadgen handshake -h lists them)")
		return 2
	}
	cfg, err := handshake.ParseFlags(args[1:])
	if errors.Is(err, flag.ErrHelp) {
		handshake.Usage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadgen handshake: %v\n", err)
		return 2
	}
	rep, err := handshake.Run(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen handshake: %v\n", err)
		return 1
	}
	if err := write(cfg.JSON, rep, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "loadgen handshake: %v\n", err)
		return 1
	}
	if ctx.Err() != nil {
		return 130 // interrupted: the report is partial
	}
	return 0
}

// write prints the table, and the JSON object when asked; with -json - the
// JSON goes to stdout and the table to stderr.
func write(jsonPath string, rep *handshake.Report, stdout, stderr io.Writer) error {
	switch jsonPath {
	case "":
		return rep.WriteTable(stdout)
	case "-":
		if err := rep.WriteTable(stderr); err != nil {
			return err
		}
		return rep.WriteJSON(stdout)
	}
	if err := rep.WriteTable(stdout); err != nil {
		return err
	}
	f, err := os.Create(jsonPath)
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
