package servers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/knowngood/knowngood/servers/internal/admin"
	"github.com/knowngood/knowngood/shared/config"
)

// healthcheck is `knowngood healthcheck [flags]`: it asks the admin listener
// of a target started with the same flags and environment for /health, and
// exits 0 when the answer is status "ok", 1 otherwise. It is the image's
// HEALTHCHECK, since an image FROM scratch has no curl.
func healthcheck(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := config.Parse(args, getenv, stdout)
	if errors.Is(err, config.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "knowngood healthcheck:", err)
		return 2
	}
	url, err := healthURL(cfg.AdminAddr)
	if err != nil {
		fmt.Fprintln(stderr, "knowngood healthcheck:", err)
		return 2
	}
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		fmt.Fprintln(stderr, "knowngood healthcheck:", err)
		return 1
	}
	defer resp.Body.Close()
	var h admin.Health
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&h); err != nil || resp.StatusCode != http.StatusOK || h.Status != "ok" {
		fmt.Fprintf(stderr, "knowngood healthcheck: GET %s: %s, status %q\n", url, resp.Status, h.Status)
		return 1
	}
	fmt.Fprintf(stdout, "ok: %s %s, up %.0fs\n", h.Variant, url, h.UptimeSeconds)
	return 0
}

// healthURL turns an admin listen address into the URL of its /health: an
// unspecified host (":9100", "0.0.0.0:9100", "[::]:9100") is asked on
// loopback.
func healthURL(adminAddr string) (string, error) {
	host, port, err := net.SplitHostPort(adminAddr)
	if err != nil {
		return "", fmt.Errorf("invalid value %q for flag -admin-addr: want HOST:PORT", adminAddr)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/health", nil
}
