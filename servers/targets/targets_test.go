package targets_test

import (
	"maps"
	"slices"
	"testing"

	"knowngood/servers/targets"
	"knowngood/servers/variants"
)

// TestEveryRowBuilds: every catalog row has a constructor, and every
// constructor a catalog row.
func TestEveryRowBuilds(t *testing.T) {
	for _, name := range variants.Names() {
		if b, ok := targets.For(name); !ok || b == nil {
			t.Errorf("variant %s has no constructor", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(targets.All())) {
		if _, ok := variants.Lookup(name); !ok {
			t.Errorf("constructor %s has no catalog row", name)
		}
	}
}
