//go:build unix

package lifecycle_test

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/knowngood/knowngood/servers/internal/lifecycle"
)

// TestSignalContextNamesTheSignal: SIGHUP starts a shutdown as SIGTERM
// does, and says which signal it was.
func TestSignalContextNamesTheSignal(t *testing.T) {
	ctx, stop := lifecycle.SignalContext()
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(closedWithin):
		t.Fatal("SIGHUP did not end the context")
	}
	var sig *lifecycle.SignalError
	if !errors.As(context.Cause(ctx), &sig) || lifecycle.SignalName(sig.Signal) != "SIGHUP" {
		t.Errorf("cause %v, want SIGHUP", context.Cause(ctx))
	}
}
