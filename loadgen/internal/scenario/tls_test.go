package scenario

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/target"
)

// TestTLSFlags: -ca is read and checked as it is parsed; -insecure wins.
func TestTLSFlags(t *testing.T) {
	s := httptest.NewTLSServer(http.NotFoundHandler())
	defer s.Close()
	dir := t.TempDir()
	ca, junk := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(junk, []byte("-----BEGIN NOTHING-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) (testConfig, error) { return Parse(args, newTestFlagSet, normalizeTest) }

	cfg, err := parse()
	if err != nil || cfg.TLS.Config() != nil {
		t.Errorf("no flags: %v, config %+v; want the system's roots (nil)", err, cfg.TLS.Config())
	}
	cfg, err = parse("-ca", ca)
	if c := cfg.TLS.Config(); err != nil || c == nil || c.RootCAs == nil || c.InsecureSkipVerify || cfg.TLS.CA != ca {
		t.Errorf("-ca: %v, config %+v", err, c)
	}
	cfg, err = parse("-ca", ca, "-insecure")
	if c := cfg.TLS.Config(); err != nil || c == nil || !c.InsecureSkipVerify {
		t.Errorf("-ca -insecure: %v, config %+v", err, c)
	}
	for file, want := range map[string]string{
		junk:                          `invalid value "` + junk + `" for flag -ca: no PEM certificate in it`,
		filepath.Join(dir, "missing"): "for flag -ca: open " + filepath.Join(dir, "missing"),
	} {
		if _, err := parse("-ca", file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("-ca %s: %v, want %q", file, err, want)
		}
	}

	// The run's check: trusted with -ca, a warning with -insecure.
	u, _ := target.ParseURL("wss://" + s.Listener.Addr().String() + "/")
	var notes strings.Builder
	cfg, _ = parse("-ca", ca)
	if err := cfg.TLS.Check(context.Background(), &notes, u, 2*time.Second); err != nil || notes.Len() != 0 {
		t.Errorf("-ca: check %v, notes %q", err, notes.String())
	}
	cfg, _ = parse("-insecure")
	if err := cfg.TLS.Check(context.Background(), &notes, u, 2*time.Second); err != nil || !strings.Contains(notes.String(), "warning: -insecure: the certificate of "+u.Addr+" is not verified") {
		t.Errorf("-insecure: check %v, notes %q", err, notes.String())
	}
	cfg, _ = parse()
	if err := cfg.TLS.Check(context.Background(), &notes, u, 2*time.Second); err == nil || !strings.Contains(err.Error(), "pass -ca FILE or -insecure") {
		t.Errorf("untrusted: check %v", err)
	}
}

// TestTLSFlagsPlain: -ca and -insecure with a plain target are said to do
// nothing.
func TestTLSFlagsPlain(t *testing.T) {
	cfg, err := Parse([]string{"-insecure"}, newTestFlagSet, normalizeTest)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := target.ParseURL("ws://127.0.0.1:1/")
	var notes strings.Builder
	if err := cfg.TLS.Check(context.Background(), &notes, u, time.Second); err != nil || !strings.Contains(notes.String(), "ws://127.0.0.1:1/ is plain, they are ignored") {
		t.Errorf("check %v, notes %q", err, notes.String())
	}
}
