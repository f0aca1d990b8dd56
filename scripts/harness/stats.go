package harness

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/protocol"
)

// statsClient reads a process's /stats over one kept-alive connection: at
// its open-files limit a target may not accept a new one.
type statsClient struct {
	once sync.Once
	tr   *http.Transport
	c    *http.Client
}

func (s *statsClient) client() *http.Client {
	s.once.Do(func() {
		s.tr = &http.Transport{}
		s.c = &http.Client{Timeout: 10 * time.Second, Transport: s.tr}
	})
	return s.c
}

// close drops the kept-alive connection.
func (s *statsClient) close() {
	s.once.Do(func() {}) // no client is made after this
	if s.tr != nil {
		s.tr.CloseIdleConnections()
	}
}

// ReadStats reads the process's /stats on its kept-alive connection.
func (p *Process) ReadStats() (protocol.Stats, error) {
	return ReadStats(p.stats.client(), p.AdminURL())
}

// Stats is ReadStats for a test, which fails on an error.
func (p *Process) Stats(t testing.TB) protocol.Stats {
	t.Helper()
	return p.StatsWith(t, p.stats.client())
}

// StatsWith reads /stats through client.
func (p *Process) StatsWith(t testing.TB, client *http.Client) protocol.Stats {
	t.Helper()
	st, err := ReadStats(client, p.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// ReadStats reads /stats from the admin listener at admin
// (http://HOST:PORT), through client; nil means a new connection, closed
// after, with a 5 s timeout.
func ReadStats(client *http.Client, admin string) (protocol.Stats, error) {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	}
	resp, err := client.Get(admin + "/stats")
	if err != nil {
		return protocol.Stats{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return protocol.Stats{}, fmt.Errorf("GET %s/stats: %s", admin, resp.Status)
	}
	return protocol.DecodeStats(resp.Body)
}

// Settled is the /stats diff since before, read once the target has seen
// every connection of the run close (connections_active back to before's),
// or after 10 s: a tool may exit before the server has counted its last
// close.
func (p *Process) Settled(t testing.TB, before protocol.Stats) protocol.Stats {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		after := p.Stats(t)
		if after.ConnectionsActive <= before.ConnectionsActive || time.Now().After(deadline) {
			return protocol.Diff(before, after)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
