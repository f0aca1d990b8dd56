package scenario

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/verdict"
)

// fakeTarget is an admin listener: /health gives its configuration, and
// each /stats read the next document of docs (the last one from then on).
type fakeTarget struct {
	mu    sync.Mutex
	docs  []string
	reads int
}

func startFake(t *testing.T, docs ...string) (*fakeTarget, string) {
	t.Helper()
	f := &fakeTarget{docs: docs}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			fmt.Fprint(w, `{"variant":"echo-test","config":{"max-conns":"0"}}`)
		case "/stats":
			fmt.Fprint(w, f.next())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeTarget) next() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	doc := f.docs[min(f.reads, len(f.docs)-1)]
	f.reads++
	return doc
}

func (f *fakeTarget) statsReads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

// fakeScenario records what the skeleton gave it at each step, and
// reports the verdicts on counts it was given.
type fakeScenario struct {
	prepareErr error
	more       bool          // Load's answer
	sent       int64         // messages the client says it sent
	onLoad     func()        // runs inside Load
	loadFor    time.Duration // how long Load takes

	steps                   []string
	beforeAtPrepare         *Snapshot
	beforeAtLoad, afterLoad *Snapshot
}

func (s *fakeScenario) Prepare(_ context.Context, f *Frame) error {
	s.steps = append(s.steps, "prepare")
	s.beforeAtPrepare = f.Before
	return s.prepareErr
}

func (s *fakeScenario) Load(_ context.Context, f *Frame) bool {
	s.steps = append(s.steps, "load")
	s.beforeAtLoad, s.afterLoad = f.Before, f.After
	if s.onLoad != nil {
		s.onLoad()
	}
	time.Sleep(s.loadFor)
	return s.more
}

func (s *fakeScenario) Finish(_ context.Context, f *Frame) []verdict.Verdict {
	s.steps = append(s.steps, "finish")
	return f.Judge(verdict.Run{Sent: s.sent, Received: -1, ServerCPU: f.ServerCPU(), ClientCPU: -1})
}

func kinds(vs []verdict.Verdict) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Kind)
	}
	return out
}

// TestRun: Prepare, a read, Load, a read, Finish; the difference of the
// reads and the target's configuration reach the verdicts.
func TestRun(t *testing.T) {
	target, admin := startFake(t,
		`{"variant":"echo-test","messages_received":100,"cpu_seconds":1.5}`,
		`{"variant":"echo-test","messages_received":150,"cpu_seconds":2.25}`)
	s := &fakeScenario{more: true, sent: 80, loadFor: 10 * time.Millisecond}
	var frame *Frame
	s.onLoad = func() {
		if n := target.statsReads(); n != 1 {
			t.Errorf("Load started after %d /stats reads, want 1", n)
		}
	}
	vs, err := Run(context.Background(), Options{Admin: admin}, frameSpy{s, &frame})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.steps) != "[prepare load finish]" {
		t.Errorf("steps %v", s.steps)
	}
	if s.beforeAtPrepare != nil || !s.beforeAtLoad.OK() || s.afterLoad != nil {
		t.Errorf("reads: at Prepare %v, at Load %v and %v", s.beforeAtPrepare, s.beforeAtLoad, s.afterLoad)
	}
	if n := target.statsReads(); n != 2 {
		t.Errorf("%d /stats reads, want 2", n)
	}
	if frame.Window < 10*time.Millisecond || frame.ClientCPU < 0 {
		t.Errorf("window %v, client CPU %v", frame.Window, frame.ClientCPU)
	}
	if got := frame.ServerCPU(); got != 0.75 {
		t.Errorf("server CPU %v, want 0.75", got)
	}
	if frame.Target.Config["max-conns"] != "0" || frame.Target.Config["variant"] != "echo-test" {
		t.Errorf("config %v", frame.Target.Config)
	}
	// The server received 50 of the 80 the client sent.
	if len(vs) != 1 || vs[0].Kind != verdict.NotDelivered {
		t.Errorf("verdicts %v, want one %s", kinds(vs), verdict.NotDelivered)
	}
}

// frameSpy passes the frame that Finish saw back to the test.
type frameSpy struct {
	*fakeScenario
	frame **Frame
}

func (s frameSpy) Finish(ctx context.Context, f *Frame) []verdict.Verdict {
	*s.frame = f
	return s.fakeScenario.Finish(ctx, f)
}

// TestRunWithoutAdmin: no reads, and the verdicts say there is no server
// view.
func TestRunWithoutAdmin(t *testing.T) {
	s := &fakeScenario{more: true, sent: -1}
	var frame *Frame
	vs, err := Run(context.Background(), Options{}, frameSpy{s, &frame})
	if err != nil {
		t.Fatal(err)
	}
	if frame.Before != nil || frame.After != nil || frame.Target.Config != nil || frame.ServerCPU() != -1 {
		t.Errorf("frame %+v", frame)
	}
	if fmt.Sprint(kinds(vs)) != "["+verdict.NoServerView+"]" {
		t.Errorf("verdicts %v", kinds(vs))
	}
}

// TestRunPrepareFails: the run ends there, with Prepare's error.
func TestRunPrepareFails(t *testing.T) {
	target, admin := startFake(t, `{"variant":"echo-test"}`)
	s := &fakeScenario{prepareErr: errors.New("no room")}
	if _, err := Run(context.Background(), Options{Admin: admin}, s); err == nil || err.Error() != "no room" {
		t.Errorf("err %v", err)
	}
	if fmt.Sprint(s.steps) != "[prepare]" || target.statsReads() != 0 {
		t.Errorf("steps %v, %d reads", s.steps, target.statsReads())
	}
}

// TestRunEndedEarly: Load says there is nothing to read; no second read.
func TestRunEndedEarly(t *testing.T) {
	target, admin := startFake(t, `{"variant":"echo-test"}`)
	s := &fakeScenario{more: false, sent: -1}
	var frame *Frame
	if _, err := Run(context.Background(), Options{Admin: admin}, frameSpy{s, &frame}); err != nil {
		t.Fatal(err)
	}
	if frame.After != nil || target.statsReads() != 1 || fmt.Sprint(s.steps) != "[prepare load finish]" {
		t.Errorf("after %v, %d reads, steps %v", frame.After, target.statsReads(), s.steps)
	}
}

// TestRunSettle: the second read waits for the connections to go; it is
// not taken after a failed first read.
func TestRunSettle(t *testing.T) {
	target, admin := startFake(t,
		`{"variant":"echo-test","connections_active":1}`,
		`{"variant":"echo-test","connections_active":5}`,
		`{"variant":"echo-test","connections_active":3}`,
		`{"variant":"echo-test","connections_active":1,"messages_received":7}`)
	s := &fakeScenario{more: true, sent: -1}
	var frame *Frame
	if _, err := Run(context.Background(), Options{Admin: admin, Settle: 10 * time.Second}, frameSpy{s, &frame}); err != nil {
		t.Fatal(err)
	}
	if !frame.After.OK() || frame.After.Stats.MessagesReceived != 7 || target.statsReads() != 4 {
		t.Errorf("after %+v, %d reads", frame.After, target.statsReads())
	}

	_, admin = startFake(t, `{"not":"stats"}`)
	s = &fakeScenario{more: true, sent: -1}
	if _, err := Run(context.Background(), Options{Admin: admin, Settle: 10 * time.Second}, frameSpy{s, &frame}); err != nil {
		t.Fatal(err)
	}
	if frame.Before == nil || frame.Before.Err == nil || frame.After != nil {
		t.Errorf("before %+v, after %+v", frame.Before, frame.After)
	}
	if Diff(frame.Before, frame.After) != nil || CPU(frame.Before, frame.After) != nil {
		t.Error("a difference without two reads")
	}
}

// TestRunReadsAfterAFailedBefore: without Settle the second read is taken
// whatever the first gave, so that the report can say both failed.
func TestRunReadsAfterAFailedBefore(t *testing.T) {
	target, admin := startFake(t, `{"not":"stats"}`, `{"variant":"echo-test"}`)
	s := &fakeScenario{more: true, sent: -1}
	var frame *Frame
	vs, err := Run(context.Background(), Options{Admin: admin}, frameSpy{s, &frame})
	if err != nil {
		t.Fatal(err)
	}
	if frame.Before.OK() || !frame.After.OK() || target.statsReads() != 2 {
		t.Errorf("before %+v, after %+v, %d reads", frame.Before, frame.After, target.statsReads())
	}
	if fmt.Sprint(kinds(vs)) != "["+verdict.NoServerView+"]" {
		t.Errorf("verdicts %v", kinds(vs))
	}
}

// TestSnapshotFailure: a read's error; none for a good read, or for one
// not taken.
func TestSnapshotFailure(t *testing.T) {
	refused := errors.New("connection refused")
	var none *Snapshot
	if (&Snapshot{Err: refused}).Failure() != refused || (&Snapshot{}).Failure() != nil || none.Failure() != nil {
		t.Error("Failure")
	}
}
