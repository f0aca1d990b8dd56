package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/prereq"
	"github.com/knowngood/knowngood/shared/procfs"
	"github.com/knowngood/knowngood/shared/protocol"
)

// composeTarget is one variant's service of compose.host.yaml: its
// addresses on the host network.
type composeTarget struct {
	v                    variants.Variant
	service, addr, admin string
}

// composeTargets are the catalog's variants with their services' addresses
// in compose.host.yaml (TestComposeCoversCatalog checks there is one each).
func composeTargets(t *testing.T) []composeTarget {
	host := hostServices(t)
	var out []composeTarget
	for _, v := range variants.All() {
		s, ok := host[v.Name]
		if !ok {
			t.Fatalf("compose.host.yaml has no service %s", v.Name)
		}
		out = append(out, composeTarget{v, v.Name, s.addr, s.admin})
	}
	return out
}

// TestComposeHost builds the image FROM scratch, brings every target of
// compose.yaml up with the host-network override, waits for the
// healthchecks, drives each target with loadgen from the image (the load
// profile's services), checks the server's /stats diff against loadgen's
// report, and tears everything down. It starts its own dockerd (vfs, no
// bridge, no iptables) when none answers, and stops it at the end.
func TestComposeHost(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: no Docker")
	}
	_, err := exec.LookPath("dockerd")
	prereq.Need(t, "dockerd (Debian's docker.io)", err)
	compose := composeCommand(t)
	env := os.Environ()
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Logf("no Docker engine answers (%s); starting one", lastLine(out))
		env = append(env, "DOCKER_HOST="+startDockerd(t))
	}
	targets := composeTargets(t)
	for _, c := range targets {
		for _, addr := range []string{c.addr, c.admin} {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Skipf("compose.yaml's fixed port %s is taken on this machine (%v): stop what listens there", addr, err)
			}
			l.Close()
		}
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	// A container cannot raise its open-files limit above dockerd's.
	nofile := min(lim.Max, 65536)
	project := fmt.Sprintf("kgtest%d", os.Getpid())
	image := "knowngood:test-" + project
	env = append(env, "KG_IMAGE="+image, fmt.Sprintf("KG_NOFILE=%d", nofile), fmt.Sprintf("KG_MAX_CONNS=%d", nofile-1000))

	run := func(timeout time.Duration, name string, args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
		}
		return out, nil
	}

	// make docker: the static binaries (the harness builds them as make
	// docker does, CGO_ENABLED=0), then the image around them.
	ctxDir := t.TempDir()
	for name, bin := range map[string]string{"knowngood": harness.KnowngoodT(t), "loadgen": harness.LoadgenT(t)} {
		if err := copyFile(bin, filepath.Join(ctxDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := run(5*time.Minute, "docker", "build", "-q", "-f", "Dockerfile", "-t", image, ctxDir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := run(time.Minute, "docker", "rmi", "-f", image); err != nil {
			t.Error(err)
		}
	})

	files := append(compose, "-p", project, "-f", "compose.yaml", "-f", "compose.host.yaml", "--profile", "load")
	t.Cleanup(func() {
		if _, err := run(2*time.Minute, files[0], append(files[1:], "down", "--remove-orphans", "--volumes", "--timeout", "10")...); err != nil {
			t.Error(err)
		}
		out, _ := run(time.Minute, "docker", "ps", "-aq", "--filter", "label=com.docker.compose.project="+project)
		if len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("containers left behind: %s", out)
		}
	})
	services := make([]string, len(targets))
	for i, c := range targets {
		services[i] = c.service
	}
	if _, err := run(4*time.Minute, files[0], append(append(files[1:], "up", "-d", "--wait", "--wait-timeout", "180"), services...)...); err != nil {
		// A container that exited says why only in its log; one that
		// found its fixed port taken, after the check above found it
		// free, is told apart by what listens there now (ss names the
		// process).
		listeners, _ := exec.Command("ss", "-Htlnp").Output()
		logs, _ := run(time.Minute, files[0], append(files[1:], "logs", "--no-color", "--tail", "20")...)
		t.Fatalf("%v\nthe containers' last lines:\n%s\nlistening now:\n%s", err, logs, listeners)
	}

	// The targets are driven side by side: each loadgen container is a
	// run of its own (compose names it apart) against its own service,
	// and what a subtest checks is that service's /stats diff, which no
	// other subtest's traffic reaches.
	for _, c := range targets {
		t.Run(c.service, func(t *testing.T) {
			t.Parallel()
			before, err := harness.ReadStats(nil, "http://"+c.admin)
			if err != nil {
				t.Fatal(err)
			}
			if before.Variant != c.service {
				t.Fatalf("%s's /stats says variant %q", c.admin, before.Variant)
			}
			var args []string
			switch {
			case c.v.Family == variants.Broadcast:
				args = []string{"load-broadcast", "broadcast", "-url", "ws://" + c.addr + "/", "-subscribers", "20", "-senders", "2", "-rate", "10", "-duration", "1s"}
			case c.v.Family == variants.Echo && c.v.Protocol == variants.TCP:
				args = []string{"load-echo", "echo", "-url", "tcp://" + c.addr, "-c", "2", "-duration", "1s", "-warmup", "0s"}
			case c.v.Family == variants.Echo:
				args = []string{"load-echo", "echo", "-url", "ws://" + c.addr + "/", "-c", "2", "-duration", "1s", "-warmup", "0s"}
			default:
				args = []string{"load-handshake", "handshake", "-url", "http://" + c.addr, "-n", "20", "-deadline", "15s", "-transport", "websocket"}
			}
			args = append(args, "-admin", "http://"+c.admin, "-json", "-")
			out, err := run(2*time.Minute, files[0], append(append(files[1:], "run", "--rm", "--no-deps"), args...)...)
			if err != nil {
				t.Fatal(err)
			}
			var report struct {
				Connected int            `json:"connected"`
				Errors    map[string]any `json:"errors"`
				Lost      uint64         `json:"lost"`
				Received  uint64         `json:"received"`
			}
			if err := json.Unmarshal(lastJSON(out), &report); err != nil {
				t.Fatalf("loadgen printed %q: %v", out, err)
			}
			after, err := harness.ReadStats(nil, "http://"+c.admin)
			if err != nil {
				t.Fatal(err)
			}
			d := protocol.Diff(before, after)
			t.Logf("loadgen: connected %d, errors %v; server: %d connections, %d handshakes ok, %d messages in, %d bytes in, %d bytes out",
				report.Connected, report.Errors, d.ConnectionsTotal, d.Handshakes[protocol.ResultOK], d.MessagesReceived, d.BytesReceived, d.BytesSent)
			if c.v.Family == variants.Broadcast {
				if report.Connected != 22 || d.ConnectionsTotal != 22 || report.Received == 0 || report.Lost != 0 {
					t.Errorf("broadcast run: loadgen connected %d, received %d, lost %d; the server saw %d connections", report.Connected, report.Received, report.Lost, d.ConnectionsTotal)
				}
				return
			}
			if c.v.Family == variants.Echo {
				if report.Connected != 2 || d.ConnectionsTotal != 2 || d.BytesReceived == 0 || d.BytesReceived < d.BytesSent {
					t.Errorf("echo run: loadgen connected %d; the server saw %d connections, %d bytes in, %d out", report.Connected, d.ConnectionsTotal, d.BytesReceived, d.BytesSent)
				}
				return
			}
			if report.Connected != 20 || d.Handshakes[protocol.ResultOK] != 20 {
				t.Errorf("handshake run: loadgen connected %d of 20, the server counted %d ok handshakes", report.Connected, d.Handshakes[protocol.ResultOK])
			}
		})
	}
}

// composeCommand finds Docker Compose v2: the docker CLI plugin, or a
// docker-compose binary of version 2 (the Python 1.x cannot run
// compose.host.yaml).
func composeCommand(t *testing.T) []string {
	if out, err := exec.Command("docker", "compose", "version", "--short").Output(); err == nil && !strings.HasPrefix(string(out), "1.") {
		return []string{"docker", "compose"}
	}
	if out, err := exec.Command("docker-compose", "version", "--short").Output(); err == nil && !strings.HasPrefix(string(out), "1.") {
		return []string{"docker-compose"}
	}
	prereq.Need(t, "Docker Compose v2 (make deps builds it as a docker CLI plugin)", fmt.Errorf("neither `docker compose` nor a docker-compose v2 is installed"))
	return nil
}

// startDockerd runs a dockerd of the test's own, with its data and sockets
// in a temporary directory, and stops it when the test ends. It returns the
// DOCKER_HOST to reach it, or skips the test with dockerd's last words when
// the engine cannot run here.
func startDockerd(t *testing.T) string {
	dir, err := os.MkdirTemp("", "kgd")
	if err != nil {
		t.Fatal(err)
	}
	host := "unix://" + filepath.Join(dir, "docker.sock")
	logPath := filepath.Join(dir, "dockerd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("dockerd", "--host", host,
		"--data-root", filepath.Join(dir, "root"), "--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "dockerd.pid"),
		"--storage-driver", "vfs", "--iptables=false", "--ip6tables=false", "--bridge", "none")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // once dockerd has stopped
		logFile.Close()
		unmountUnder(dir) // dockerd leaves exec/netns/default mounted
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	done := harness.StopAtCleanup(t, cmd, unix.SIGTERM, 30*time.Second)
	deadline := time.Now().Add(60 * time.Second)
	for {
		info := exec.Command("docker", "info", "--format", "{{.ServerVersion}}")
		info.Env = append(os.Environ(), "DOCKER_HOST="+host)
		if info.Run() == nil {
			return host
		}
		exited := false
		select {
		case <-done:
			exited = true
		default:
		}
		if exited || time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Skipf("the Docker engine cannot run on this machine: dockerd %s: %s", map[bool]string{true: "exited", false: "did not answer within 60s"}[exited], lastLine(log))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// copyFile copies the executable src to dst.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(dir string) {
	points, _ := procfs.MountPoints(procfs.Self)
	for i := len(points) - 1; i >= 0; i-- {
		if strings.HasPrefix(points[i], dir+"/") {
			_ = unix.Unmount(points[i], unix.MNT_DETACH)
		}
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// lastJSON is the last line of out that looks like a JSON object.
func lastJSON(out []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if bytes.HasPrefix(bytes.TrimSpace(lines[i]), []byte("{")) {
			return lines[i]
		}
	}
	return out
}
