package config_test

import (
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/faults"
)

// TestFaultFlagsAsControl: a known-bad mode's flag takes a value exactly
// when the admin listener's POST /control/fault takes it for the mode
// (faults.Modes Parse and Check; the listener takes off too), and
// /health shows the flag in the form the listener answers.
func TestFaultFlagsAsControl(t *testing.T) {
	values := []string{"0", "1", "0.5", "1.5", "NaN", "-0.1", "+Inf", "x", "", "200ms", "-1s", "5ms", "10ms", "1s", "soon",
		"10", "-1", "4294967295", "4294967296", "true", "false", "yes"}
	for _, name := range faults.Names() {
		for _, v := range values {
			_, flagErr := config.Parse([]string{"-fault-" + name + "=" + v}, env(nil), nil)
			var m faults.Modes
			err := m.Parse(name, v)
			bad, _ := m.Check()
			if control := err == nil && bad == ""; (flagErr == nil) != control {
				t.Errorf("-fault-%s=%q: flag error %v; control parse %v, check %q", name, v, flagErr, err, bad)
			}
		}
	}
	cfg := config.Default()
	cfg.Faults = faults.Modes{Reject: 0.25, Delay: 1500 * time.Millisecond, CloseAfter: 7, Drop: 1, LeakTimers: time.Minute, DropChunkedPost: true}
	effective := cfg.Effective()
	for name, v := range cfg.Faults.Values() {
		if effective["fault-"+name] != v {
			t.Errorf("/health shows -fault-%s as %q, the admin listener %q", name, effective["fault-"+name], v)
		}
	}
}
