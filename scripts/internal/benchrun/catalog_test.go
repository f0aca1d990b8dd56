package benchrun

import (
	"strings"
	"testing"
)

// TestCatalogPicks: the variants the benchmarks single out are the ones
// their tables name.
func TestCatalogPicks(t *testing.T) {
	for got, want := range map[string]string{
		SioBaseline: "empty", SharedLoop: "blocking", GnetEcho: "echo-gnet", GnetBroadcast: "broadcast-gnet",
	} {
		if got != want {
			t.Errorf("picked %q, want %q", got, want)
		}
	}
}

func TestSocketIOVariants(t *testing.T) {
	if got := strings.Join(SocketIOVariants, ","); got != "empty,async,blocking" {
		t.Errorf("SocketIOVariants = %s", got)
	}
}
