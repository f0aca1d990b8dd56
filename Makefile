# knowngood: reference WebSocket and Socket.IO targets for load clients.
#
#   make run-server VARIANT=blocking ARGS="-delay 100ms"
#   make test

VARIANT ?= empty
ARGS ?=
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# go test -race on a 2-core machine: one package at a time keeps the load
# tests from measuring each other.
GOTEST := go test -race -p 1 -count=1

.PHONY: run-server list deps test lint test-go bench-handshake bench-blocking bench-echo bench-conns build clean

## run-server: run one target (VARIANT=empty|async|blocking|..., ARGS="-flag value ...")
run-server:
	go run ./servers -variant $(VARIANT) $(ARGS)

## list: every variant with one line each
list:
	@go run ./servers -list

build:
	CGO_ENABLED=0 go build -o bin/knowngood ./servers
	CGO_ENABLED=0 go build -o bin/loadgen ./loadgen

## deps: what the tests need besides Go (the pinned npm packages, Debian's python3-socketio)
deps:
	scripts/install-deps.sh

## test: lint, then every test under -race, with the real JS and Python clients
test: deps lint test-go

test-go:
	$(GOTEST) ./...

lint:
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	go vet ./...
	go run $(STATICCHECK) ./...

## bench-handshake: empty, async, blocking and Node socket.io at N = 50..2000 (not a test)
bench-handshake: deps
	go run ./scripts/bench/handshake

## bench-echo: every echo target and Node ws, C = 1 and 100, sync and pipelined, 3 runs each (not a test)
bench-echo: deps
	go run ./scripts/bench/echo

## bench-conns: server RSS per idle connection at the highest count the open-files limits allow (not a test)
bench-conns: deps
	go run ./scripts/bench/conns

## bench-blocking: the blocking curve, measured against min(1, T / (N x delay)) (not a test)
bench-blocking:
	go run ./scripts/bench/handshake -variants blocking -node=false -n 20,50,100,200 -deadline 2500ms

clean:
	rm -rf bin
