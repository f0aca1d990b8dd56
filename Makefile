# knowngood: reference WebSocket and Socket.IO targets for load clients.
#
#   make help
#   make run-server VARIANT=blocking ARGS="-delay 100ms"
#   make test
#
# A target's "## name: text" line is what make help prints for it.

.DEFAULT_GOAL := help

VARIANT ?= empty
ARGS ?=
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
ACTIONLINT := github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
# go test -race over every package at once: up to TEST_P test binaries
# side by side, and in each up to TEST_PARALLEL of the tests that call
# t.Parallel (each starts targets of its own on free ports). The tests
# spend most of their time waiting on clients, timeouts and child
# processes, so on a 2-core machine the suite takes a fraction of the sum
# of its packages; a test that depends on timing states its margin and
# passes beside the others as it does beside a CPU hog (make stress).
# TEST_P=1 TEST_PARALLEL=1 runs one test at a time. 45 minutes a package:
# with a cold build cache the cross-builds compile the module for macOS
# and Windows and the release for six platforms.
#
# The commands the tests start are built once into TEST_BINDIR, which
# scripts/harness reads from KNOWNGOOD_TEST_BINDIR, instead of linked
# again in each test package's process (go test without it builds them).
TEST_BINDIR := $(CURDIR)/bin/test
TEST_BINS := ./servers/knowngood ./loadgen ./scripts/bench/floors/gnetecho ./scripts/experiments/cluster ./scripts/clients/sio-connect-go
TEST_P ?= 3
TEST_PARALLEL ?= 3
GOTEST := KNOWNGOOD_TEST_BINDIR=$(TEST_BINDIR) go test -race -count=1 -timeout 45m -p $(TEST_P) -parallel $(TEST_PARALLEL)
# The longest packages, named first so that they start first: the suite
# ends when the last of them does.
LONG_PKGS := ./servers ./scripts/soak ./scripts/experiments/cluster ./scripts/recipes ./docker ./scripts/crossbuild \
	./loadgen ./servers/broadcast ./servers/internal/wsserver ./servers/socketio ./scripts/readme ./scripts/cluster

.PHONY: help dist k8s-nginx-conf run-server list deps deps-quick test test-quick test-slow test-slow-only test-bins observe lint test-go test-docker docker fuzz stress stress-races soak bench-handshake bench-blocking bench-echo bench-conns bench-instr bench-broadcast bench-cluster experiment-burst experiment-frameworks experiment-handshake experiment-echo experiment-cluster build clean cluster cluster-down cluster-status \
	k6-echo k6-socketio artillery-ws artillery-socketio tsung wscat python-handshake js-handshake js-ws-echo locust

## help: every target with its line (this list)
help:
	@awk '/^## [^:]+: / { sub(/^## /, ""); i = index($$0, ": "); printf "  %-20s %s\n", substr($$0, 1, i - 1), substr($$0, i + 2) }' $(firstword $(MAKEFILE_LIST))

## run-server: run one target (VARIANT=empty|async|blocking|..., ARGS="-flag value ...")
run-server:
	go run ./servers/knowngood -variant $(VARIANT) $(ARGS)

## list: every variant with one line each
list:
	@go run ./servers/knowngood -list

# The commands, built into a directory each (go build -o DIR/ names the
# binaries knowngood and loadgen, with .exe on Windows).
COMMANDS := ./servers/knowngood ./loadgen

## build: bin/knowngood and bin/loadgen, static, for this machine (-version says which commit)
build:
	CGO_ENABLED=0 go build -buildvcs=auto -o bin/ $(COMMANDS)

## dist: knowngood and loadgen for linux, darwin, windows x amd64, arm64: six archives and SHA256SUMS in dist/ (VERSION=)
VERSION ?=
dist:
	go run ./scripts/dist -out dist $(if $(VERSION),-version $(VERSION))

## cluster: REPLICAS of VARIANT joined through Redis, nginx in front on 127.0.0.1:PORT (LB=least_conn|ip_hash|query_hash|round_robin; scripts/cluster.sh)
REPLICAS ?= 3
PORT ?= 8080
LB ?=
cluster: build
	VARIANT=$(VARIANT) REPLICAS=$(REPLICAS) PORT=$(PORT) LB=$(LB) ARGS="$(ARGS)" KNOWNGOOD=$(CURDIR)/bin/knowngood scripts/cluster.sh up

## cluster-down: stop what make cluster started (the same PORT)
cluster-down:
	PORT=$(PORT) scripts/cluster.sh down

## cluster-status: each replica's /health, nginx, Redis
cluster-status:
	PORT=$(PORT) scripts/cluster.sh status

## deps: everything make test and the recipes need besides Go and Node, only what is missing; each step says what, why and how long first (apt-get needs root; ~17 min cold, 1 s warm)
deps:
	scripts/install-deps.sh

## deps-quick: what make test-quick needs: the pinned JS clients and Debian's python3-socketio for /usr/bin/python3
deps-quick:
	scripts/install-deps.sh quick

# The packages whose tests need more than Go and the JS and Python clients,
# or take minutes: a Docker engine, Docker Compose and Prometheus (docker:
# the image, every compose target, the scrape configs), the external load
# tools (scripts/recipes: k6, artillery, tsung, wscat), nginx and Redis in
# front of replicas (scripts/cluster), and make soak in small on every
# variant (scripts/soak, 1.5 minutes with the variants side by side), and
# make experiment-cluster in small, each fault and a kill
# (scripts/experiments/cluster, 1.5 minutes).
# make test-slow runs them.
SLOW_PKGS := ./docker ./scripts/recipes ./scripts/cluster ./scripts/soak ./scripts/experiments/cluster

## test: lint, then every test under -race, with the real JS and Python clients and every external tool (what CI runs)
# Lint runs first, not beside the tests: its 20 s of both cores would fall
# on TestJSClient's 500 polling sessions upgrading at once, where the
# default engine's known loss grows with the load.
test: deps lint test-go

## test-go: every test, without lint or deps
test-go: test-bins
	$(GOTEST) $(LONG_PKGS) ./...

## test-quick: the Go and real-client tests (JS, Python) under -race -short, without Docker, Prometheus, the load tools, nginx or the soak test
test-quick: deps-quick test-bins
	$(GOTEST) -short $(filter-out $(SLOW_PKGS:./%=github.com/knowngood/knowngood/%),$(shell go list $(LONG_PKGS) ./...))

## test-slow: the tests that need Docker, Compose, Prometheus, k6, artillery, tsung, wscat or nginx, and the soak test (part of make test)
test-slow: deps test-slow-only

# Each run links them again from the build cache (seconds), so that they
# are never older than the tree.
test-bins:
	CGO_ENABLED=0 go build -o $(TEST_BINDIR)/ $(TEST_BINS)

test-slow-only: test-bins
	$(GOTEST) $(SLOW_PKGS)

lint:
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	go vet ./...
	go run $(STATICCHECK) ./...
	go run $(ACTIONLINT)

## fuzz: every fuzz target for FUZZTIME each (make test runs their seed corpora)
FUZZTIME ?= 20s
FUZZ_TARGETS := ./shared/config:FuzzParse ./shared/protocol:FuzzDecodeStats ./servers/broadcast:FuzzSessionMessage \
	./servers/internal/wsserver:FuzzGnetUpgradeSplits ./servers/socketio:FuzzPackets ./servers/socketio:FuzzPacketsNative \
	./servers/internal/wsserver:FuzzFrameGuard ./servers/internal/wsserver:FuzzGnetFrames ./shared/wsframe:FuzzReaderSplits
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		echo "== $${t#*:} ($${t%%:*}, $(FUZZTIME))"; \
		go test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}" || exit 1; \
	done

## stress: the timing-sensitive tests STRESSN times each beside a busy loop on every core; pass counts per test
STRESSN ?= 20
STRESS_RACES := ./servers/socketio:'^(TestPollingCloseRace|TestUpgradeRace|TestHeartbeatRace)$$'
STRESS_TESTS ?= $(STRESS_RACES) \
	./servers/socketio:'^(TestBlocking(Contract|FreezesTheLoop|RepeatedConnects|LeaversStillHold)|TestChunkedPost|TestFaultModes|TestPolling(Heartbeat|Upgrade|MalformedPacket))$$' \
	./scripts/experiments/handshake:'^TestSideBySide$$' \
	./servers/broadcast:'^(TestMemberOnceUpgraded|TestSlowCloseFindsTheNonReader|TestBacklogGoesOutTogether|TestReaderOutlivesStuckWriter|TestClusterFanOut|TestClusterRedisRestart|TestClusterPusherKilled)$$' \
	./servers/internal/cluster:'^TestBusBounded$$' \
	./servers/internal/wsserver:'^(TestFrameBytes|TestOverflowBounded)$$' \
	./servers:'^(TestTimeBounds|TestLongPollOutlivesBounds|TestSIGHUP)$$' \
	./loadgen/broadcast:'^(TestSubscribers|TestTLS)' \
	./loadgen:'^(TestWatchBlocking|TestWatchUnknownFigures|TestWatchCatchesLyingTool|TestExit.*|TestTLSBroadcast|TestTLSEcho|TestReportRefusedAtCap)$$'
stress:
	flock /tmp/knowngood-bench.lock go run ./scripts/stress -n $(STRESSN) $(STRESS_TESTS)

## stress-races: the Socket.IO race tests 200 times each beside the busy loop
stress-races:
	flock /tmp/knowngood-bench.lock go run ./scripts/stress -n 200 $(STRESS_RACES)

## soak: 10 rounds of 5,000 connect/echo/disconnect on every variant; goroutines back to baseline, RSS within 10% of round 1
soak:
	flock /tmp/knowngood-bench.lock go run ./scripts/soak $(SOAKARGS)

## bench-handshake: empty, async, blocking, bare zishang520 and Node socket.io at N = 50..2000, then sustained (not a test)
bench-handshake: deps
	go run ./scripts/bench/handshake

## bench-echo: every echo target and Node ws, C = 1 and 100, sync and pipelined, 3 runs each (not a test)
bench-echo: deps
	go run ./scripts/bench/echo

## bench-conns: server RSS per idle connection at the highest count the open-files limits allow (not a test)
bench-conns: deps
	go run ./scripts/bench/conns

## bench-instr: the instrumentation's cost on every echo target, in instructions per message under valgrind's callgrind (not a test)
bench-instr:
	go run ./scripts/bench/instr

## bench-broadcast: timed push to 1,000 and 10,000 subscribers on every broadcast variant, a write-per-connection floor and Node ws: CPU per delivery, latency, accept time (not a test)
bench-broadcast: deps
	go run ./scripts/bench/broadcast

## bench-cluster: push to 9,000 subscribers on 1 vs 3 replicas on Redis (CPU per delivery); Socket.IO room broadcast, 2 knowngood vs 2 Node redis-adapter servers, and 1 bare zishang520 vs 1 empty vs 1 Node (not a test)
bench-cluster: deps
	go run ./scripts/bench/cluster

## experiment-burst: the listen-backlog report rerun: C = 5000..10000 connects at once (a WebSocket echo, a plain GET) against a busy echo-gorilla at backlog 512 and 16384, beside the report's figures (ARGS="-c ... -backlogs ..."; not a test)
experiment-burst:
	flock /tmp/knowngood-bench.lock go run ./scripts/experiments/burst -out experiment-burst.md $(ARGS)

## experiment-handshake: the founding report rerun: knowngood's empty, async, blocking (both models) beside python-socketio on uvicorn and Node's socket.io, N = 50..500, the report's client and the others (ARGS="-servers ... -clients ... -reps 3"; not a test)
experiment-handshake: deps
	flock /tmp/knowngood-bench.lock go run ./scripts/experiments/handshake -out experiment-handshake.md -html experiment-handshake.html $(ARGS)

## experiment-cluster: the 100,000-connection Socket.IO cluster run on this machine: replicas on Redis behind nginx, loadgen shards ramping in steps, faults on demand (ARGS="-conns 20000 -replicas 4 -fault emfile|leak-timers -redis-shards 2 -kill-replica 60s -stall-replica 60s:3s -engine zishang520 -json FILE -html FILE"; scripts/experiments/README.md; not a test)
experiment-cluster: deps
	flock /tmp/knowngood-bench.lock go run ./scripts/experiments/cluster $(ARGS)

## experiment-frameworks: the eight-framework comparison rerun: Node ws and socket.io, Python websockets and FastAPI (with and without uvloop), Netty, Tomcat 10's WebSocket, gorilla and coder beside knowngood's targets; echo, connections held, latency at 10,000 (ARGS="-frameworks ... -scenarios ... -reps 3"; not a test)
experiment-frameworks: deps
	flock /tmp/knowngood-bench.lock go run ./scripts/experiments/frameworks -out experiment-frameworks.md $(ARGS)

## experiment-echo: every echo target and Node ws, sync and pipelined, C = 1 and 100, one run each (not a test)
experiment-echo: deps
	go run ./scripts/bench/echo -reps 1 -metrics-off=false

## bench-blocking: the blocking curve of each -blocking-model, measured against its prediction (not a test)
bench-blocking:
	for m in asyncio node; do go run ./scripts/bench/handshake -variants blocking -blocking-model $$m -node=false -bare=false -sustained 0 -n 20,50,100,200 -deadline 2500ms || exit 1; done

## docker: the static Linux binaries for the engine's CPU, then the image knowngood:dev FROM scratch (needs a Docker engine, no registry)
# The image runs Linux whatever the host (a Mac, say): the binaries are
# built for linux and the architecture the engine reports, into their own
# directory so that bin/ keeps the host's.
DOCKER_ARCH ?= $(firstword $(shell docker version -f '{{.Server.Arch}}' 2>/dev/null) $(shell go env GOARCH))
docker:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(DOCKER_ARCH) go build -o bin/docker/ $(COMMANDS)
	docker build -f docker/Dockerfile -t knowngood:dev bin/docker

## k8s-nginx-conf: docker/k8s/cluster/nginx.conf again from scripts/cluster.sh conf (after a change to docker/nginx/ or to nginx.env there)
k8s-nginx-conf:
	env $$(cat docker/k8s/cluster/nginx.env) scripts/cluster.sh conf > docker/k8s/cluster/nginx.conf

## test-docker: the image, every compose target on the host network, loadgen against each, /stats (also part of make test)
test-docker: deps test-bins
	$(GOTEST) -v -run 'TestComposeHost|TestPrometheus|TestPromtool|TestDashboard' ./docker

# Recipes for external load tools (scripts/README.md), against a target
# that is running. By default each goes to 127.0.0.1:PORT, PORT 8080: where
# make run-server listens, whatever its VARIANT (run an echo or broadcast
# variant for the WS recipes, a Socket.IO one for the SIO ones), and where
# make cluster's nginx listens. COMPOSE=1 goes to the port of VARIANT in
# docker/compose.yaml instead (echo-gorilla for the WS recipes and empty for
# the SIO ones when no VARIANT is given; KG_PORT_PREFIX as compose applies
# it). WS= or SIO= set the whole URL.
#
#   make run-server VARIANT=echo-gnet &  make k6-echo
#   make k6-echo COMPOSE=1 VARIANT=echo-gnet          # docker/compose.yaml's echo-gnet, 8085
WS_RECIPES := k6-echo artillery-ws tsung wscat js-ws-echo
SIO_RECIPES := k6-socketio artillery-socketio python-handshake js-handshake locust
# docker/compose.yaml's target port of each variant (a test checks the two agree).
COMPOSE_PORTS := empty:8080 async:8081 blocking:8082 echo-gorilla:8083 echo-coder:8084 echo-gnet:8085 echo-tcp:8086 \
	broadcast-gorilla:8087 broadcast-coder:8088 broadcast-gnet:8089 echo-nbio:8090 broadcast-nbio:8091
PORT ?= 8080
# The variant a recipe aims at with COMPOSE=1: VARIANT when given, else the
# recipe's kind's default (VARIANT's own default, empty, is run-server's).
$(WS_RECIPES): RECIPE_VARIANT = $(if $(filter file,$(origin VARIANT)),echo-gorilla,$(VARIANT))
$(SIO_RECIPES): RECIPE_VARIANT = $(if $(filter file,$(origin VARIANT)),empty,$(VARIANT))
compose_port = $(patsubst $(RECIPE_VARIANT):%,%,$(filter $(RECIPE_VARIANT):%,$(COMPOSE_PORTS)))
TARGET_PORT = $(if $(COMPOSE),$(if $(compose_port),$(KG_PORT_PREFIX)$(compose_port),$(error VARIANT=$(RECIPE_VARIANT) is not a service of docker/compose.yaml; want one of: $(foreach p,$(COMPOSE_PORTS),$(firstword $(subst :, ,$(p)))))),$(PORT))
WS ?= ws://127.0.0.1:$(TARGET_PORT)/
SIO ?= http://127.0.0.1:$(TARGET_PORT)
N ?= 50
K6 := $(shell go env GOPATH)/bin/k6

## k6-echo: k6/ws echo against WS (127.0.0.1:PORT, PORT=8080; COMPOSE=1 VARIANT=echo-gnet for compose's; VUS, ITERATIONS, MESSAGES via K6ARGS="-e VUS=20")
k6-echo: deps
	$(K6) run -e TARGET=$(WS) $(K6ARGS) scripts/k6/ws-echo.js

## k6-socketio: Socket.IO v5 over k6/ws against SIO (127.0.0.1:PORT; COMPOSE=1 [VARIANT=async])
k6-socketio: deps
	$(K6) run -e TARGET=$(SIO) $(K6ARGS) scripts/k6/socketio.js

## artillery-ws / artillery-socketio: artillery's ws and socketio engines against WS / SIO (127.0.0.1:PORT; COMPOSE=1 [VARIANT=])
artillery-ws: deps
	cd scripts/artillery && ARTILLERY_DISABLE_TELEMETRY=true npx artillery run --target $(WS) ws-echo.yml

artillery-socketio: deps
	cd scripts/artillery && ARTILLERY_DISABLE_TELEMETRY=true npx artillery run --target $(SIO) socketio.yml

## tsung: ts_websocket echo against TSUNG_HOST TSUNG_PORT (127.0.0.1 PORT; COMPOSE=1 [VARIANT=])
TSUNG_HOST ?= 127.0.0.1
TSUNG_PORT ?= $(TARGET_PORT)
tsung: deps
	scripts/tsung/run.sh $(TSUNG_HOST) $(TSUNG_PORT)

## wscat: one message to WS and its echo back, a one-line manual check (127.0.0.1:PORT; COMPOSE=1 [VARIANT=])
wscat: deps
	sleep 3 | scripts/wscat/node_modules/.bin/wscat -c $(WS) -x "hello from wscat" -w 1

## python-handshake / js-handshake: N concurrent connects to SIO, 15 s deadline, success table as JSON (127.0.0.1:PORT; COMPOSE=1 [VARIANT=])
python-handshake: deps
	/usr/bin/python3 scripts/clients/sio_connect.py --url $(SIO) --n $(N) --transports websocket --deadline-ms 15000

js-handshake: deps
	node scripts/clients/sio-connect.mjs --url $(SIO) --n $(N) --transports websocket --deadline-ms 15000

## locust: the cluster report's client (python-socketio over WebSocket, trade_update every 1-5 s) as Locust users against SIO, headless, under loadgen watch (127.0.0.1:PORT; ADMIN, the target's admin URL, default 127.0.0.1:9100; LOCUSTARGS="-u 100 -r 10 -t 60s")
ADMIN ?= http://127.0.0.1:$(if $(COMPOSE),$(KG_PORT_PREFIX)$(patsubst 809%,911%,$(patsubst 808%,910%,$(compose_port))),9100)
LOCUSTARGS ?= -u $(N) -r 10 -t 30s --stop-timeout 10
locust: deps
	cd scripts && go run ../loadgen watch -admin $(ADMIN) -- locust -f locust/locustfile.py --headless --host $(SIO) $(LOCUSTARGS)

## js-ws-echo: the ws package's echo cases against WS (127.0.0.1:PORT; COMPOSE=1 [VARIANT=])
js-ws-echo: deps
	node scripts/clients/ws-echo.mjs --url $(WS)

## observe: Debian's prometheus on OBSERVE_ADDR (127.0.0.1:9090), scraping the admin ports 9100-9111 of running targets (docker/prometheus/prometheus.host.yml: compose.yaml's, or make run-server's on 9100); no image pulled; Ctrl-C stops
OBSERVE_ADDR ?= 127.0.0.1:9090
observe:
	@command -v prometheus >/dev/null || { echo "observe: no prometheus binary on PATH: make deps installs Debian's (apt-get install -y prometheus)" >&2; exit 1; }
	@dir=$$(mktemp -d /tmp/knowngood-observe.XXXXXX) && trap : INT TERM && \
		echo "observe: Prometheus on http://$(OBSERVE_ADDR), scraping 127.0.0.1:9100-9111 every 5 s; data in $$dir until it stops (Ctrl-C)" && \
		{ prometheus --config.file=docker/prometheus/prometheus.host.yml --storage.tsdb.path="$$dir" \
			--web.listen-address=$(OBSERVE_ADDR) --log.level=warn; rc=$$?; rm -rf "$$dir"; exit $$rc; }


## clean: remove bin/ and dist/
clean:
	rm -rf bin dist
