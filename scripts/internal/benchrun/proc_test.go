package benchrun

import (
	"os"
	"strings"
	"testing"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with a space and a parenthesis in it.
	line := "1234 (node a) b) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 11 0 5000 1000000 2000"
	got, err := parseStatCPU(line)
	if err != nil || got != 3.25 {
		t.Errorf("parseStatCPU = %v, %v; want 3.25", got, err)
	}
	if _, err := parseStatCPU("1234 (x) S 1 2"); err == nil {
		t.Error("a short line parsed")
	}
}

func TestProcCPUSecondsSelf(t *testing.T) {
	s, err := ProcCPUSeconds(os.Getpid())
	if err != nil || s < 0 {
		t.Errorf("ProcCPUSeconds(self) = %v, %v", s, err)
	}
}

func TestParseCPULine(t *testing.T) {
	busy, all, ok := parseCPULine("cpu  100 5 50 800 20 3 2 0 7 0")
	if !ok || busy != 160 || all != 980 {
		t.Fatalf("parseCPULine = %d, %d, %v; want 160, 980, true", busy, all, ok)
	}
	if _, _, ok := parseCPULine("intr 1 2 3"); ok {
		t.Fatal("parseCPULine accepted a line that is not cpu")
	}
	if m := StartMachine().Summary(); !strings.Contains(m, "CPUs") {
		t.Fatalf("Summary = %q", m)
	}
}
