// Package frameworks is the set of servers the frameworks experiment
// runs: each framework of a published WebSocket benchmark (128-byte text
// echo, every server minimal: echo only, TCP_NODELAY, no logging) as that
// report wrote it, on the real framework as installed here, and how to
// start a fresh one on a free loopback port. The servers are Node's ws and
// socket.io (scripts/node), the websockets library and FastAPI on
// asyncio and uvloop (scripts/python, Debian's /usr/bin/python3), gorilla
// and coder (the floors in scripts/bench/floors) and Netty and Tomcat
// (scripts/java, Debian's jars). Paths are relative to the repository
// root, which a program using this runs from.
package frameworks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/servers/variants"
)

// Server is one framework's minimal echo server.
type Server struct {
	Key      string // the -frameworks name: node-ws, node-socketio, websockets, websockets-uvloop, fastapi, fastapi-uvloop, gorilla, coder, netty, tomcat
	Row      string // the report's row name: "ws (Node)", "Socket.IO (Node)", ...
	Runs     string // what runs here, with the versions installed as of writing; the listening line has those that ran
	SocketIO bool   // speaks Socket.IO (EchoEvent answered with EchoReply), not plain WebSocket

	kind kind
	file string   // the script, the floor's library, or the Java class
	args []string // a Python script's arguments beyond its port
	// needs is what the server loads that make deps installs: Python
	// modules, Node packages in scripts/node_modules, or jars.
	needs []string
	from  string // what holds needs: Debian's packages, or the npm step
}

// The Socket.IO server's echo: an EchoEvent from the client comes back as
// an EchoReply with the same arguments.
const (
	EchoEvent = "message"
	EchoReply = "message-back"
)

// kind is what runs a server, which says what it needs.
type kind int

const (
	node   kind = iota // node scripts/node/FILE 0 (benchrun.StartNode)
	python             // /usr/bin/python3 scripts/python/FILE --port 0 ARGS
	floor              // the floor on library FILE, built from this module (benchrun.StartEchoTarget)
	java               // java @scripts/java/build/FILE.args 0
)

// Python is the interpreter the Python servers run on: Debian's, whose
// packages (python3-websockets, python3-fastapi, ...) make deps installs.
const Python = "/usr/bin/python3"

var servers = []Server{
	{Key: "node-ws", Row: "ws (Node)", Runs: "Node 20, ws 8.23.0 (scripts/node/ws-echo-server.mjs)",
		kind: node, file: "ws-echo-server.mjs", needs: []string{"ws"}, from: "npm ci in scripts/"},
	{Key: "node-socketio", Row: "Socket.IO (Node)", Runs: "Node 20, socket.io 4.8.4 (scripts/node/sio-server.mjs)", SocketIO: true,
		kind: node, file: "sio-server.mjs", needs: []string{"socket.io"}, from: "npm ci in scripts/"},
	{Key: "websockets", Row: "websockets (Python asyncio)", Runs: "Debian's websockets 10.4 on asyncio",
		kind: python, file: "ws_echo_server.py", args: []string{"--loop", "asyncio"},
		needs: []string{"websockets"}, from: "python3-websockets"},
	{Key: "websockets-uvloop", Row: "websockets + uvloop", Runs: "Debian's websockets 10.4 on uvloop 0.17",
		kind: python, file: "ws_echo_server.py", args: []string{"--loop", "uvloop"},
		needs: []string{"websockets", "uvloop"}, from: "python3-websockets python3-uvloop"},
	{Key: "fastapi", Row: "FastAPI (uvicorn)", Runs: "Debian's FastAPI 0.92 on uvicorn 0.17 (its websockets protocol), asyncio",
		kind: python, file: "fastapi_echo_server.py", args: []string{"--loop", "asyncio"},
		needs: []string{"fastapi", "uvicorn"}, from: "python3-fastapi python3-uvicorn"},
	{Key: "fastapi-uvloop", Row: "FastAPI + uvloop", Runs: "Debian's FastAPI 0.92 on uvicorn 0.17 (its websockets protocol), uvloop 0.17",
		kind: python, file: "fastapi_echo_server.py", args: []string{"--loop", "uvloop"},
		needs: []string{"fastapi", "uvicorn", "uvloop"}, from: "python3-fastapi python3-uvicorn python3-uvloop"},
	{Key: "gorilla", Row: "gorilla/websocket", Runs: "gorilla/websocket v1.5.3 on net/http (scripts/bench/floors/gorillaecho)",
		kind: floor, file: "gorilla"},
	{Key: "coder", Row: "nhooyr.io (coder)", Runs: "coder/websocket v1.8.15 on net/http (scripts/bench/floors/coderecho)",
		kind: floor, file: "coder"},
	{Key: "netty", Row: "Netty", Runs: "Debian's Netty 4.1.48 on NIO, OpenJDK 17",
		kind: java, file: "NettyEcho", needs: []string{"/usr/share/java/netty-codec-http.jar"}, from: "libnetty-java"},
	{Key: "tomcat", Row: "Spring WebSocket", Runs: "Tomcat 10.1 WebSocket (Spring WebSocket is not in Debian 12), OpenJDK 17",
		kind: java, file: "TomcatEcho", needs: []string{"/usr/share/java/tomcat10-websocket.jar"}, from: "libtomcat10-java"},
}

// Servers returns every server, Node's first, then Python's, Go's and
// Java's; the slice is the caller's.
func Servers() []Server { return slices.Clone(servers) }

// Keys are the servers' keys, in order.
func Keys() []string {
	keys := make([]string, len(servers))
	for i, s := range servers {
		keys[i] = s.Key
	}
	return keys
}

// Lookup returns the server of key.
func Lookup(key string) (Server, bool) {
	i := slices.IndexFunc(servers, func(s Server) bool { return s.Key == key })
	if i < 0 {
		return Server{}, false
	}
	return servers[i], true
}

// Available is nil when s can run here, else why not, naming what to
// install.
func (s Server) Available() error {
	switch s.kind {
	case node:
		if _, err := exec.LookPath("node"); err != nil {
			return fmt.Errorf("%s: node is not on PATH: install Node 20", s.Key)
		}
		for _, pkg := range s.needs {
			if _, err := os.Stat("scripts/node_modules/" + pkg + "/package.json"); err != nil {
				return fmt.Errorf("%s: scripts/node_modules/%s is missing: run make deps (%s)", s.Key, pkg, s.from)
			}
		}
	case python:
		modules := strings.Join(s.needs, ", ")
		if out, err := exec.Command(Python, "-c", "import "+modules).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %s cannot import %s (%v: %s): run make deps (Debian's %s)", s.Key, Python, modules, err, benchrun.LastLine(string(out)), s.from)
		}
	case floor:
		if _, err := exec.LookPath("go"); err != nil {
			return fmt.Errorf("%s: go is not on PATH, which builds the server", s.Key)
		}
	case java:
		for _, c := range []string{"java", "javac"} {
			if _, err := exec.LookPath(c); err != nil {
				return fmt.Errorf("%s: %s is not on PATH: run make deps (Debian's openjdk-17-jdk-headless)", s.Key, c)
			}
		}
		for _, jar := range s.needs {
			if _, err := os.Stat(jar); err != nil {
				return fmt.Errorf("%s: %s is missing: run make deps (Debian's %s)", s.Key, jar, s.from)
			}
		}
	}
	return nil
}

// Start starts a fresh s on a free 127.0.0.1 port and waits until it
// listens (harness.StartTimeout at most). url is ws://HOST:PORT/, or for
// a Socket.IO server http://HOST:PORT. The first line of p.Log() is the
// server's listening line, with the versions that run. A Java server's
// classes are built first if their sources changed (scripts/java/build.sh,
// whose output goes to stderr). The caller stops p.
func (s Server) Start(ctx context.Context, stderr io.Writer) (p *harness.Process, url string, err error) {
	if err := s.Available(); err != nil {
		return nil, "", err
	}
	switch s.kind {
	case node:
		p, err = benchrun.StartNode(ctx, stderr, s.file, s.Key)
	case floor:
		// The benchmarks' floor, started as they start it.
		p, _, _, err = benchrun.StartEchoTarget(ctx, stderr, benchrun.FloorOf(variants.Library(s.file)))
	default:
		p, err = s.start(ctx, stderr)
	}
	if err != nil {
		return nil, "", err
	}
	if s.SocketIO {
		return p, "http://" + p.Addr, nil
	}
	return p, "ws://" + p.Addr + "/", nil
}

// start starts s, a Python or Java server, on a free port.
func (s Server) start(ctx context.Context, stderr io.Writer) (*harness.Process, error) {
	argv, err := s.command(stderr)
	if err != nil {
		return nil, err
	}
	p, err := harness.StartProcess(ctx, s.Key, argv)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "%s listening on %s\n", s.Key, p.Addr)
	return p, nil
}

// command is the command line that starts s on a free port.
func (s Server) command(stderr io.Writer) ([]string, error) {
	switch s.kind {
	case python:
		return append([]string{Python, "scripts/python/" + s.file, "--host", "127.0.0.1", "--port", "0"}, s.args...), nil
	case java:
		if err := buildJava(stderr); err != nil {
			return nil, err
		}
		return []string{"java", "@scripts/java/build/" + s.file + ".args", "0"}, nil
	}
	return nil, errors.New("no such kind of server")
}

// javaBuilt guards the build of the Java servers: one build.sh at a time,
// each javac writing the same classes, and once a process.
var javaBuilt struct {
	sync.Mutex
	done bool
}

// buildJava runs scripts/java/build.sh, which compiles what changed.
func buildJava(stderr io.Writer) error {
	javaBuilt.Lock()
	defer javaBuilt.Unlock()
	if javaBuilt.done {
		return nil
	}
	cmd := exec.Command("scripts/java/build.sh")
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("scripts/java/build.sh: %w (make deps installs what it needs)", err)
	}
	javaBuilt.done = true
	return nil
}
