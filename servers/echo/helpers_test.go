package echo_test

import (
	"testing"

	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/servers/targets"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/leaktest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}

type build = lifecycletest.Build

// wsTarget is a WebSocket echo of the catalog with its constructor.
type wsTarget struct {
	name  string
	build build
}

// wsTargets are the WebSocket echoes of the catalog, which every behaviour
// test runs against.
var wsTargets = wsTargetsWhere()

// wsTargetsWhere returns the WebSocket echoes of the catalog for which
// every predicate holds.
func wsTargetsWhere(preds ...func(variants.Variant) bool) []wsTarget {
	var out []wsTarget
	for _, v := range variants.Where(append(preds, variants.InFamily(variants.Echo), variants.Speaks(variants.WebSocket))...) {
		b, ok := targets.For(v.Name)
		if !ok {
			panic("no constructor for " + v.Name)
		}
		out = append(out, wsTarget{v.Name, b})
	}
	return out
}

// forEach runs f as a subtest for every WebSocket target.
func forEach(t *testing.T, f func(t *testing.T, name string, b build)) {
	for _, tg := range wsTargets {
		t.Run(tg.name, func(t *testing.T) { f(t, tg.name, tg.build) })
	}
}

// start runs a target and shuts it down when the test ends.
func start(t *testing.T, name string, b build, tweak func(*config.Config)) *lifecycletest.Target {
	t.Helper()
	return lifecycletest.Start(t, name, b, lifecycletest.Options{Tweak: tweak})
}

func check(t *testing.T, what string, got, want uint64) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %d, want %d", what, got, want)
	}
}

// tcpBuild builds echo-tcp as main does.
var tcpBuild, _ = targets.For("echo-tcp")
