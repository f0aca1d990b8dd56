package proc

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFiles(t *testing.T) {
	f := Files{Soft: 20000, Hard: 20000, Open: 8}
	if got := f.Allows(); got != 20000-8-FileReserve {
		t.Errorf("Allows = %d", got)
	}
	if err := f.Check("n", f.Allows()); err != nil {
		t.Errorf("Check at the limit: %v", err)
	}
	err := f.Check("n", f.Allows()+1)
	want := "-n 19961 is more than the open-files limit allows: open-files limit 20000 (hard 20000), 8 open: room for 19960 connections; lower -n or raise the limit"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Check beyond the limit: %v\nwant %s...", err, want)
	}
	raised := Files{Soft: 4096, Hard: 4096, RaisedFrom: 1024, Open: 40}
	if s := raised.String(); s != "open-files limit 4096 (hard 4096, soft raised from 1024), 40 open: room for 4024 connections" {
		t.Errorf("String = %q", s)
	}
	if (Files{Soft: 10, Open: 5}).Allows() != 0 {
		t.Error("a limit below the reserve allows connections")
	}
}

func TestOpenFiles(t *testing.T) {
	f, err := OpenFiles()
	if err != nil {
		t.Skip(err)
	}
	if f.Soft == 0 || f.Soft != f.Hard && f.RaisedFrom != 0 || f.Open < 3 {
		t.Errorf("%+v", f)
	}
}
