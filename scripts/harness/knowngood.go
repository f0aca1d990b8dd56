package harness

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// loopback are the flags that put knowngood on free loopback ports, with
// the JSON log that carries its "listening" line.
var loopback = []string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-log-format", "json"}

// StartKnowngood builds knowngood (once), runs it with args on free
// loopback ports, through wrapper's words when there are some (prlimit
// --nofile=128, say: the wrapper must exec the binary, so that the PID is
// the server's), and returns once /health answers. The caller stops it
// with Stop.
func StartKnowngood(ctx context.Context, wrapper []string, args ...string) (*Process, error) {
	bin, err := Knowngood()
	if err != nil {
		return nil, err
	}
	argv := append(append(append(append([]string{}, wrapper...), bin), loopback...), args...)
	p, err := StartProcess(ctx, nameOf(args), argv)
	if err != nil {
		return nil, err
	}
	if err := p.waitHealthy(ctx); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

// nameOf names a knowngood process by its flags, the variant's without
// the flag's name: "knowngood echo-gnet -pprof".
func nameOf(args []string) string {
	words := []string{"knowngood"}
	for _, a := range args {
		if a != "-variant" && a != "--variant" {
			words = append(words, a)
		}
	}
	return strings.Join(words, " ")
}

// Start is StartKnowngood for a test: a failure fails the test, and the
// process is stopped when the test ends; a process that had to be killed
// fails it too.
func Start(t testing.TB, args ...string) *Process {
	t.Helper()
	return StartUnder(t, nil, args...)
}

// StartUnder is Start through a wrapper command.
func StartUnder(t testing.TB, wrapper []string, args ...string) *Process {
	t.Helper()
	p, err := StartKnowngood(context.Background(), wrapper, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("%v\n%s", err, p.Log())
		}
	})
	return p
}

// AdminURL is http://HOST:PORT of the admin listener.
func (p *Process) AdminURL() string { return "http://" + p.AdminAddr }

// waitHealthy polls /health until it answers 200, on connections of its
// own so that none stays open in the target.
func (p *Process) waitHealthy(ctx context.Context) error {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Timeout: 2 * time.Second, Transport: tr}
	deadline := time.Now().Add(StartTimeout)
	for {
		err := get(ctx, client, p.AdminURL()+"/health")
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: /health: %v: %s", p.Name, err, p.Tail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.done:
			return fmt.Errorf("%s exited (%v): %s", p.Name, p.exitErr, p.Tail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// get asks for url and wants 200 OK.
func get(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	return nil
}
