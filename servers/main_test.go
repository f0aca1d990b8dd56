package servers

import (
	"bytes"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/servers/variants"
)

// TestListOutput: -list prints what it printed before the catalog moved
// out of main, byte for byte (scripts and the README quote it).
func TestListOutput(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("testdata/list.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if status := run([]string{"-list"}, func(string) string { return "" }, &out, &errOut); status != 0 {
		t.Fatalf("status %d; stderr %s", status, errOut.String())
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("-list printed\n%s\nwant (testdata/list.txt)\n%s", out.Bytes(), want)
	}
}

// TestUnreadFlagWarnings: each flag given to a variant that does not read
// it, on the command line or in the environment, is one WARN line at
// start-up that names it; flags the variant reads are not. The address
// is taken (by this test), so run returns after the start-up lines.
func TestUnreadFlagWarnings(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cases := []struct {
		args []string
		env  map[string]string
		want []string // the flags warned about, in flag order
	}{
		{[]string{"-variant", "echo-gorilla", "-delay", "1s"}, nil, []string{"-delay"}},
		{[]string{"-variant", "echo-gorilla"}, map[string]string{"KG_PUSH_INTERVAL": "1s"}, []string{"-push-interval"}},
		{[]string{"-variant", "echo-tcp", "-max-message", "1000", "-loops", "2", "-ping-interval", "5s"}, nil, []string{"-loops", "-max-message"}},
		{[]string{"-variant", "async", "-delay", "1s", "-transports", "websocket"}, nil, nil},
		{[]string{"-variant", "broadcast-gnet", "-loops", "2", "-slow", "close"}, map[string]string{"KG_MAX_CONNS": "10"}, nil},
		{[]string{"-variant", "empty", "-delay", "1s"}, nil, []string{"-delay"}},
	}
	for _, c := range cases {
		args := append(c.args, "-addr", taken.Addr().String(), "-admin-addr", "")
		var out, errOut bytes.Buffer
		if status := run(args, func(k string) string { return c.env[k] }, &out, &errOut); status != 1 {
			t.Fatalf("%v: status %d, want 1 (the address is bad); stderr %s", c.args, status, errOut.String())
		}
		var got []string
		for line := range strings.Lines(errOut.String()) {
			if !strings.Contains(line, "flag ignored: this variant does not read it") {
				continue
			}
			_, flag, _ := strings.Cut(line, " flag=")
			flag, _, _ = strings.Cut(flag, " ")
			got = append(got, flag)
			if !strings.Contains(line, "level=WARN") {
				t.Errorf("%v: %q is not a warning", c.args, line)
			}
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%v %v: warned about %q, want %q; stderr:\n%s", c.args, c.env, got, c.want, errOut.String())
		}
	}
}

// TestBadAddressExits2: an out-of-range port is one line that names the
// flag, exit status 2, before anything listens.
func TestBadAddressExits2(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-addr", ":99999"}, {"-admin-addr", "127.0.0.1:65536"}, {"-addr", "8080"}} {
		var out, errOut bytes.Buffer
		status := run(args, func(string) string { return "" }, &out, &errOut)
		lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
		if status != 2 || len(lines) != 1 || !strings.Contains(lines[0], "invalid value for "+args[0]+":") {
			t.Errorf("%v: status %d, stderr %q; want 2 and one line naming %s", args, status, errOut.String(), args[0])
		}
	}
}

// TestVersion: -version prints one line with the Go version.
func TestVersion(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if status := run([]string{"-version"}, func(string) string { return "" }, &out, &errOut); status != 0 {
		t.Fatalf("status %d; stderr %s", status, errOut.String())
	}
	if line := out.String(); !strings.HasPrefix(line, "knowngood ") || !strings.Contains(line, runtime.Version()) || strings.Count(line, "\n") != 1 {
		t.Errorf("-version printed %q", line)
	}
}

// TestGCPercent: the gnet variants run with gnetGCPercent unless GOGC is
// set; the others keep Go's default.
func TestGCPercent(t *testing.T) {
	t.Parallel()
	env := func(gogc string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return gogc
			}
			return ""
		}
	}
	for _, tc := range []struct {
		variant, gogc string
		want          int
		ok            bool
	}{
		{"echo-gnet", "", gnetGCPercent, true},
		{"broadcast-gnet", "", gnetGCPercent, true},
		{"echo-gnet", "100", 0, false},
		{"echo-gorilla", "", 0, false},
		{"echo-tcp", "", 0, false},
	} {
		v, found := variants.Lookup(tc.variant)
		if !found {
			t.Fatalf("no variant %s", tc.variant)
		}
		if got, ok := gcPercent(v, env(tc.gogc)); got != tc.want || ok != tc.ok {
			t.Errorf("%s with GOGC=%q: %d, %v; want %d, %v", tc.variant, tc.gogc, got, ok, tc.want, tc.ok)
		}
	}
}
