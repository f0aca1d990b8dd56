package variants_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/protocol"
)

func TestRows(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range variants.All() {
		if v.Name == "" || seen[v.Name] {
			t.Errorf("name %q empty or repeated", v.Name)
		}
		seen[v.Name] = true
		if v.About == "" || strings.Contains(v.About, "\n") {
			t.Errorf("%s: about %q, want one line", v.Name, v.About)
		}
		if !slices.Contains([]variants.Family{variants.SocketIO, variants.Echo, variants.Broadcast}, v.Family) {
			t.Errorf("%s: unknown family %q", v.Name, v.Family)
		}
		if _, ws := variants.LookupWebSocketLibrary(v.Library); !ws && v.Library != variants.Zishang520 && v.Library != variants.None {
			t.Errorf("%s: unknown library %q", v.Name, v.Library)
		}
		if !slices.Contains([]variants.Protocol{variants.SocketIOProtocol, variants.WebSocket, variants.TCP}, v.Protocol) {
			t.Errorf("%s: unknown protocol %q", v.Name, v.Protocol)
		}
		if (v.Family == variants.SocketIO) != (v.Connect != variants.NoConnect) {
			t.Errorf("%s: connect model %q in family %s: every Socket.IO variant has one, no other", v.Name, v.Connect, v.Family)
		}
		for _, f := range v.Flags {
			if slices.Contains(variants.Common, f) {
				t.Errorf("%s: flag -%s is in Common already", v.Name, f)
			}
		}
	}
}

// TestFlagsExist: every flag the catalog names is a flag of config, and
// every flag of config is read by some variant, so a new flag makes its
// author say which variants read it (or start-up would warn that it is
// ignored).
func TestFlagsExist(t *testing.T) {
	defined := config.Default().Effective()
	defined["list"] = "" // not settings, so not in Effective
	defined["version"] = ""
	named := map[string]bool{}
	for _, f := range variants.Common {
		named[f] = true
	}
	for _, v := range variants.All() {
		for _, f := range v.Flags {
			named[f] = true
		}
	}
	for f := range named {
		if _, ok := defined[f]; !ok {
			t.Errorf("catalog names -%s, which config does not define", f)
		}
	}
	for f := range defined {
		if !named[f] {
			t.Errorf("config defines -%s, which no variant reads", f)
		}
	}
}

func TestReads(t *testing.T) {
	cases := []struct {
		variant, flag string
		want          bool
	}{
		{"async", "delay", true},
		{"blocking", "delay", true},
		{"empty", "delay", false},
		{"echo-gorilla", "delay", false},
		{"echo-gnet", "loops", true},
		{"broadcast-gnet", "loops", true},
		{"echo-coder", "loops", false},
		{"broadcast-coder", "slow", true},
		{"echo-gorilla", "push-interval", false},
		{"echo-tcp", "max-message", false},
		{"echo-tcp", "ping-interval", true},
		{"empty", "addr", true},
		{"empty", "max-message", false},
		{"empty", "max-payload", true},
	}
	for _, c := range cases {
		v, ok := variants.Lookup(c.variant)
		if !ok {
			t.Fatalf("no variant %s", c.variant)
		}
		if got := v.Reads(c.flag); got != c.want {
			t.Errorf("%s reads -%s: %v, want %v", c.variant, c.flag, got, c.want)
		}
	}
}

func TestSelect(t *testing.T) {
	cases := []struct {
		what string
		got  []variants.Variant
		want string
	}{
		{"socketio", variants.ByFamily(variants.SocketIO), "empty async blocking"},
		{"websocket echoes", variants.Where(variants.InFamily(variants.Echo), variants.Speaks(variants.WebSocket)), onEachLibrary("echo-", func(variants.WebSocketLibrary) bool { return true })},
		{"raw", variants.Where(variants.Speaks(variants.TCP)), "echo-tcp"},
		{"broadcast on net/http", variants.Where(variants.InFamily(variants.Broadcast), variants.OnNetHTTP), onEachLibrary("broadcast-", func(w variants.WebSocketLibrary) bool { return w.NetHTTP })},
		{"gnet", variants.Where(variants.Is(variants.Gnet)), "echo-gnet broadcast-gnet"},
		{"not socketio", variants.Where(variants.Not(variants.InFamily(variants.SocketIO)), variants.Is(variants.Coder)), "echo-coder broadcast-coder"},
		{"everything", variants.Where(), strings.Join(variants.Names(), " ")},
		{"connect at once", variants.Where(variants.Connects(variants.AtOnce)), "empty"},
		{"connect on a timer", variants.Where(variants.Connects(variants.OwnTimer)), "async"},
		{"connect on the shared loop", variants.Where(variants.Connects(variants.SharedLoop)), "blocking"},
		{"no connect model", variants.Where(variants.Connects(variants.NoConnect), variants.InFamily(variants.SocketIO)), ""},
	}
	for _, c := range cases {
		if got := strings.Join(variants.NamesOf(c.got), " "); got != c.want {
			t.Errorf("%s: %q, want %q", c.what, got, c.want)
		}
	}
	if v, ok := variants.First(variants.InFamily(variants.Echo), variants.Is(variants.Gnet)); !ok || v.Name != "echo-gnet" {
		t.Errorf("First(echo, gnet) = %q, %v; want echo-gnet", v.Name, ok)
	}
	if _, ok := variants.First(variants.Speaks(variants.TCP), variants.Is(variants.Gnet)); ok {
		t.Error("First found a variant where none fits")
	}
	if _, ok := variants.Lookup("nope"); ok {
		t.Error("Lookup found a variant that does not exist")
	}
}

// TestAllIsACopy: a caller that sorts or edits All's result leaves the
// catalog as it was.
func TestAllIsACopy(t *testing.T) {
	a := variants.All()
	a[0].Name = "changed"
	if variants.All()[0].Name == "changed" {
		t.Error("All returned the catalog itself")
	}
}

// TestUnavailable: the gnet variants are refused on Windows with the
// reason, and every variant runs on Linux and macOS.
func TestUnavailable(t *testing.T) {
	for _, v := range variants.All() {
		for _, goos := range []string{"linux", "darwin"} {
			if !variants.RunsOn(v, goos) {
				t.Errorf("%s does not run on %s", v.Name, goos)
			}
		}
		if got, want := variants.RunsOn(v, "windows"), v.Library != variants.Gnet; got != want {
			t.Errorf("%s runs on windows: %v, want %v", v.Name, got, want)
		}
	}
}

// TestURL: the URL on the "listening" line, per protocol, plain and TLS.
func TestURL(t *testing.T) {
	for name, want := range map[string][2]string{
		"empty":        {"http://127.0.0.1:8080/socket.io/", "https://127.0.0.1:8080/socket.io/"},
		"echo-gorilla": {"ws://127.0.0.1:8080/", "wss://127.0.0.1:8080/"},
		"echo-tcp":     {"tcp://127.0.0.1:8080", "tls://127.0.0.1:8080"},
	} {
		v, _ := variants.Lookup(name)
		if got := [2]string{v.URL("127.0.0.1:8080", false), v.URL("127.0.0.1:8080", true)}; got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// onEachLibrary names the variants prefix+LIB of the registry's libraries
// that keep holds.
func onEachLibrary(prefix string, keep func(variants.WebSocketLibrary) bool) string {
	var names []string
	for _, w := range variants.WebSocketLibraries() {
		if keep(w) {
			names = append(names, prefix+string(w.Library))
		}
	}
	return strings.Join(names, " ")
}

// TestFaultModesRead: a variant reads the flag of every known-bad mode it
// applies, which the admin listener's POST /control/fault switches: the
// Socket.IO ones on the variants that speak Socket.IO (their /health
// protocol, which the listener decides by), the others on every variant.
func TestFaultModesRead(t *testing.T) {
	for _, v := range variants.All() {
		for _, name := range faults.Names() {
			want := !faults.SocketIOOnly(name) || v.Health().Protocol == protocol.ProtocolSocketIO
			if got := v.Reads("fault-" + name); got != want {
				t.Errorf("%s reads -fault-%s: %v, want %v", v.Name, name, got, want)
			}
		}
	}
}
