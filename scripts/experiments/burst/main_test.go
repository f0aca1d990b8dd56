package main

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/scripts/harness"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent(), goleak.Cleanup(func(code int) {
		harness.RemoveBuilds()
		os.Exit(code)
	}))
}

// TestShort is the experiment in small (-short): 300 and 600 connects at
// once, both shapes, against echo-gorilla under steady traffic, at
// backlog 16 and 4096. At 16 the accept queue overflows whatever the
// machine's speed (a few hundred handshakes complete before the accept
// loop takes the first dozen): the kernel drops connects at the target's
// listener and counts overflows (ownOverflows: the namespace's count,
// bounded by the listener's), some clients wait out a SYN retry, and
// loadgen's verdict puts connects at the listen queue. At 4096 the queue
// holds the whole burst: no overflow at the target, every connect gets in,
// and loadgen names the listen queue only if the namespace's counts moved
// (another program's listener: they are the namespace's, the listener's
// own are not). Nothing here depends on how long a connect takes, so a
// slow machine passes too.
func TestShort(t *testing.T) {
	t.Chdir("../../..")
	o, err := parseFlags([]string{"-short"})
	if err != nil {
		t.Fatal(err)
	}
	if somaxconn, err := somaxconnNow(); err != nil || somaxconn < 4096 {
		t.Skipf("net.core.somaxconn %d (%v): the large backlog needs 4096", somaxconn, err)
	}
	rows, err := measureAll(context.Background(), o, tlog{t})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	writeTable(&table, o, 4096, rows)
	t.Logf("\n%s", table.String())
	for _, r := range rows {
		name := r.shape + " C=" + strconv.Itoa(r.c) + " backlog " + strconv.Itoa(r.backlog)
		switch {
		case r.err != nil:
			t.Errorf("%s: %v", name, r.err)
		case r.limit != r.backlog:
			t.Errorf("%s: /stats gives an accept-queue limit of %d", name, r.limit)
		case r.busy == 0:
			t.Errorf("%s: the steady traffic echoed nothing over the burst", name)
		case r.listenerError != nil:
			t.Errorf("%s: %v", name, r.listenerError)
		case r.backlog == 16 && (ownOverflows(r) <= 0 || secondPlus(r.rep) == 0 || !namesListenQueue(verdictsOf(r.rep))):
			t.Errorf("%s: %d overflows at the target, %d clients >= 1 s, verdicts %v; want some of each, and a verdict naming the listen queue",
				name, ownOverflows(r), secondPlus(r.rep), r.rep.Verdicts)
		case r.backlog == 4096 && ownOverflows(r) != 0:
			t.Errorf("%s: %d overflows at the target (%d dropped at its listener, %d in the namespace); want none", name, ownOverflows(r), r.listenerDrops, r.overflows)
		case r.backlog == 4096 && r.drops == 0 && namesListenQueue(verdictsOf(r.rep)):
			t.Errorf("%s: verdicts %v name the listen queue, which dropped none", name, r.rep.Verdicts)
		case r.backlog == 4096 && r.rep.Established != r.c:
			t.Errorf("%s: %d of %d established (errors %v)", name, r.rep.Established, r.c, r.rep.Errors)
		}
	}
}

// TestTimeWait: a connection the client closed first leaves a TIME_WAIT
// socket with the server's port at its remote end; countTimeWait finds
// it, and awaitTimeWait gives up at its bound with it still there (it
// lasts 60 s).
func TestTimeWait(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, ok := <-accepted
	if !ok {
		t.Fatal("no accept")
	}
	_ = c.Close() // the client's FIN first: its socket ends in TIME_WAIT
	var b [1]byte
	_ = s.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := s.Read(b[:]); err == nil {
		t.Fatal("read data, want the client's FIN")
	}
	_ = s.Close()
	waited, left, err := awaitTimeWait(context.Background(), port, 300*time.Millisecond)
	if err != nil || left != 1 || waited < 300*time.Millisecond {
		t.Errorf("waited %s, %d left, %v; want the bound, 1 left", waited, left, err)
	}
}

func TestParseSkmemDrops(t *testing.T) {
	out := "LISTEN 3 2 127.0.0.1:39169 0.0.0.0:*\n\t skmem:(r0,rb131072,t0,tb16384,f0,w0,o0,bl0,d52)\nLISTEN 0 2 [::1]:39169 [::]:*\n\t skmem:(r0,rb131072,t0,tb16384,f0,w0,o0,bl0,d3)\n"
	if n, err := parseSkmemDrops(out); n != 55 || err != nil {
		t.Errorf("parseSkmemDrops = %d, %v; want 55", n, err)
	}
	if _, err := parseSkmemDrops(""); err == nil {
		t.Error("no listener: no error")
	}
}

func TestTimeWaitIn(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:9C40 0100007F:1F90 06 00000000:00000000 03:00000D6B 00000000     0        0 0 3 0000000000000000
   2: 0100007F:1F90 0200007F:9C41 06 00000000:00000000 03:00000D6B 00000000     0        0 0 3 0000000000000000
   3: 0100007F:9C42 0100007F:1F91 06 00000000:00000000 03:00000D6B 00000000     0        0 0 3 0000000000000000
   4: 0100007F:9C43 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000
`
	if n, err := timeWaitIn(strings.NewReader(table), 0x1F90); n != 2 || err != nil {
		t.Errorf("timeWaitIn = %d, %v; want 2 (one at each end)", n, err)
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil || o.variant != "echo-gorilla" || len(o.backlogs) != 2 || o.backlogs[1] != 16384 || len(o.cs) != 4 || o.timeWait != time.Minute || len(o.shapes) != 2 {
		t.Errorf("defaults %+v, %v", o, err)
	}
	if o, err := parseFlags([]string{"-short", "-c", "50"}); err != nil || len(o.cs) != 1 || o.cs[0] != 50 || o.backlogs[0] != 16 || o.timeWait != 0 {
		t.Errorf("-short -c 50: %+v, %v; want -c 50 and the rest of -short", o, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-variant", "empty"}, "flag -variant: want a WebSocket echo"},
		{[]string{"-backlogs", "0"}, "flag -backlogs: want a comma-separated list of positive integers"},
		{[]string{"-c", "x"}, "flag -c: want a comma-separated list"},
		{[]string{"-shapes", "post"}, "flag -shapes: want a list of echo, get"},
		{[]string{"-echo", "0"}, "flag -echo: want 1 to 1048576"},
		{[]string{"-rate", "-1"}, "flag -rate: want 0 to"},
		{[]string{"-rate-conns", "0"}, "flag -rate-conns: want 1 to 1000"},
		{[]string{"-timeout", "0s"}, "flag -timeout: want a positive duration"},
		{[]string{"-time-wait", "-1s"}, "flag -time-wait: want 0 to 10m"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		if _, err := parseFlags(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want %q", c.args, err, c.want)
		}
	}
}

// tlog writes to the test's log.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Logf("%s", strings.TrimSpace(string(p)))
	return len(p), nil
}
