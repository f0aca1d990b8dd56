package handshake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"knowngood/shared/protocol"
)

// snapshot is one /stats document, with the process figures that a server
// may or may not report (they are absent from older servers).
type snapshot struct {
	protocol.Stats
	CPUSeconds    *float64
	ResidentBytes *float64
}

// statsClient reads /stats from a server's admin listener.
type statsClient struct {
	base string
	http *http.Client
}

func newStatsClient(base string) *statsClient {
	return &statsClient{
		base: base,
		// Its own transport, so that closing it leaves no idle connection
		// (and no goroutine) behind.
		http: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{}},
	}
}

func (c *statsClient) close() { c.http.CloseIdleConnections() }

func (c *statsClient) get(ctx context.Context) (snapshot, error) {
	url := c.base + "/stats"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return snapshot{}, err
	}
	res, err := c.http.Do(req)
	if err != nil {
		return snapshot{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return snapshot{}, fmt.Errorf("GET %s: %w", url, err)
	}
	if res.StatusCode != http.StatusOK {
		return snapshot{}, fmt.Errorf("GET %s: %s", url, res.Status)
	}
	stats, err := protocol.DecodeStats(bytes.NewReader(body))
	if err != nil {
		return snapshot{}, fmt.Errorf("GET %s: %w", url, err)
	}
	var extra struct {
		CPUSeconds    *float64 `json:"cpu_seconds"`
		ResidentBytes *float64 `json:"resident_bytes"`
	}
	_ = json.Unmarshal(body, &extra) // DecodeStats has accepted the document
	return snapshot{Stats: stats, CPUSeconds: extra.CPUSeconds, ResidentBytes: extra.ResidentBytes}, nil
}

// settled takes the after snapshot once the server has seen the run's
// connections go (connections_active back to where it was before), or after
// wait, whichever comes first, so that disconnects and abandoned handshakes
// are counted.
func (c *statsClient) settled(ctx context.Context, before snapshot, wait time.Duration) (snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last snapshot
	var lastErr error
	for {
		s, err := c.get(ctx)
		if err == nil {
			last, lastErr = s, nil
			if s.ConnectionsActive <= before.ConnectionsActive {
				return s, nil
			}
		} else if last.Variant == "" {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if last.Variant != "" {
				return last, nil
			}
			return snapshot{}, lastErr
		case <-tick.C:
		}
	}
}

// serverView is what the server saw between two snapshots.
func serverView(admin string, before, after snapshot) *ServerView {
	d := protocol.Diff(before.Stats, after.Stats)
	v := &ServerView{
		Admin:   admin,
		Variant: after.Variant,
		Handshakes: map[string]uint64{
			protocol.ResultOK: 0, protocol.ResultRejected: 0, protocol.ResultFailed: 0, protocol.ResultAbandoned: 0,
		},
		ConnectionsActive: after.ConnectionsActive,
		ResidentBytes:     after.ResidentBytes,
	}
	for k, n := range d.Handshakes {
		v.Handshakes[k] = n
	}
	if d.HandshakeLatency.Count > 0 {
		v.P50ms = msPtr(d.HandshakeLatency.P50 * 1000)
		v.P99ms = msPtr(d.HandshakeLatency.P99 * 1000)
	}
	if before.CPUSeconds != nil && after.CPUSeconds != nil {
		cpu := *after.CPUSeconds - *before.CPUSeconds
		v.CPUSeconds = &cpu
	}
	return v
}
