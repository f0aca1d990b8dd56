// Package statsclient reads a knowngood target's /stats document from its
// admin listener, for the load scenarios' "server's view": a snapshot before
// a run, one after, and their difference.
package statsclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/knowngood/knowngood/shared/protocol"
)

// DefaultAdminPort is the admin port assumed on the target's host when
// -admin is not given.
const DefaultAdminPort = "9100"

// Snapshot is one /stats document, with the process figures that a server
// may or may not report (they are absent from older servers).
type Snapshot struct {
	protocol.Stats
	CPUSeconds    *float64
	ResidentBytes *float64
}

// Client reads /stats from one admin listener.
type Client struct {
	base string
	http *http.Client
}

// New returns a client for the admin listener at base (http://HOST:PORT).
func New(base string) *Client {
	return &Client{
		base: base,
		// Its own transport, so that Close leaves no idle connection (and
		// no goroutine) behind.
		http: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{}},
	}
}

// Close drops the client's idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Get reads one snapshot.
func (c *Client) Get(ctx context.Context) (Snapshot, error) {
	url := c.base + "/stats"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Snapshot{}, err
	}
	res, err := c.http.Do(req)
	if err != nil {
		return Snapshot{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return Snapshot{}, fmt.Errorf("GET %s: %w", url, err)
	}
	if res.StatusCode != http.StatusOK {
		return Snapshot{}, fmt.Errorf("GET %s: %s", url, res.Status)
	}
	stats, err := protocol.DecodeStats(bytes.NewReader(body))
	if err != nil {
		return Snapshot{}, fmt.Errorf("GET %s: %w", url, err)
	}
	var extra struct {
		CPUSeconds    *float64 `json:"cpu_seconds"`
		ResidentBytes *float64 `json:"resident_bytes"`
	}
	_ = json.Unmarshal(body, &extra) // DecodeStats has accepted the document
	return Snapshot{Stats: stats, CPUSeconds: extra.CPUSeconds, ResidentBytes: extra.ResidentBytes}, nil
}

// AdminURL resolves a scenario's -admin flag: when it was not set, the
// target's host with DefaultAdminPort; "" for none; else HOST:PORT or
// http(s)://HOST:PORT, returned as SCHEME://HOST:PORT, or the same after
// DNSPrefix (see Expand). The error names the flag, on one line.
func AdminURL(value string, set bool, targetHost string) (string, error) {
	if !set {
		return "http://" + net.JoinHostPort(targetHost, DefaultAdminPort), nil
	}
	if value == "" {
		return "", nil
	}
	if rest, ok := strings.CutPrefix(value, DNSPrefix); ok {
		admin, err := AdminURL(rest, true, "")
		if err != nil || admin == "" {
			return "", fmt.Errorf("invalid value %q for flag -admin: want %shttp://NAME:PORT, every address of NAME one replica's admin listener", value, DNSPrefix)
		}
		return DNSPrefix + admin, nil
	}
	admin := value
	if !strings.Contains(admin, "://") {
		admin = "http://" + admin
	}
	a, err := url.Parse(admin)
	if err != nil || (a.Scheme != "http" && a.Scheme != "https") || a.Host == "" || (a.Path != "" && a.Path != "/") {
		return "", fmt.Errorf("invalid value %q for flag -admin: want http://HOST:PORT, or '' for none", value)
	}
	return a.Scheme + "://" + a.Host, nil
}

// Config reads the target's effective configuration, keyed by flag name,
// from /health (with "variant" among the keys, and "protocol", "family"
// and "connect" when the target publishes them: see protocol.About).
func (c *Client) Config(ctx context.Context) (map[string]string, error) {
	url := c.base + "/health"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, res.Status)
	}
	var health struct {
		Variant string            `json:"variant"`
		Config  map[string]string `json:"config"`
		protocol.About
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&health); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if health.Config == nil {
		health.Config = map[string]string{}
	}
	for key, value := range map[string]string{"variant": health.Variant, "protocol": health.Protocol, "family": health.Family, "connect": health.Connect} {
		if value != "" {
			health.Config[key] = value
		}
	}
	return health.Config, nil
}

// FreeOSMemory asks the target to collect its garbage and return the free
// memory to the OS (POST /debug/freeosmemory, served with -pprof), so that
// its RSS next read is what it holds live plus the runtime's own.
func (c *Client) FreeOSMemory(ctx context.Context) error {
	url := c.base + "/debug/freeosmemory"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return err
	}
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	_ = res.Body.Close()
	switch {
	case res.StatusCode == http.StatusNotFound:
		return fmt.Errorf("POST %s: 404 (the target serves it with -pprof only)", url)
	case res.StatusCode/100 != 2:
		return fmt.Errorf("POST %s: %s", url, res.Status)
	}
	return nil
}

// DNSPrefix before an admin URL, dns+http://NAME:PORT, makes it stand for
// every address NAME resolves to, each one replica's admin listener: a
// Kubernetes headless Service, or a Compose service scaled to several
// containers, names every replica that way.
const DNSPrefix = "dns+"

// Expand is admin, a value of AdminURL, as the admin listeners it stands
// for: itself, or for DNSPrefix one SCHEME://ADDR:PORT per address the
// name resolves to now, sorted. The error says what did not resolve.
func Expand(ctx context.Context, admin string) ([]string, error) {
	rest, ok := strings.CutPrefix(admin, DNSPrefix)
	if !ok {
		return []string{admin}, nil
	}
	u, err := url.Parse(rest)
	if err != nil {
		return nil, fmt.Errorf("-admin %s: %w", admin, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, u.Hostname())
	if err != nil {
		return nil, fmt.Errorf("-admin %s: %w", admin, err)
	}
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	out := make([]string, len(addrs))
	for i, a := range addrs {
		host := net.JoinHostPort(a, u.Port())
		if u.Port() == "" { // the scheme's port
			host = strings.TrimSuffix(host, ":")
		}
		out[i] = u.Scheme + "://" + host
	}
	return out, nil
}
