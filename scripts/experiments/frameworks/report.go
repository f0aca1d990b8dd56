package main

// reported is one framework's row of the published comparison: two
// identical 16-core EPYC machines, one Go load tool, a 128-byte text
// echo, every server minimal with TCP_NODELAY, each scenario 60 s with the
// first 10 s discarded, the median of 3 runs. Zero: the report gives no
// figure for the row (it measured the uvloop variants for throughput
// only).
type reported struct {
	sync, async float64 // echo on one connection, msg/s
	held        float64 // connections held, added 1,000 at a time, each with a heartbeat every 5 s
	p50, p99    float64 // ms, at 10,000 connections
}

// theReport holds its figures by the -frameworks key of the server that
// reruns the row here.
var theReport = map[string]reported{
	"node-ws":           {sync: 78e3, async: 132e3, held: 62e3, p50: 1.2, p99: 6.8},
	"node-socketio":     {sync: 26e3, async: 35e3, held: 40e3, p50: 3.8, p99: 15.2},
	"websockets":        {sync: 24e3, async: 41e3, held: 21e3, p50: 2.6, p99: 12.4},
	"websockets-uvloop": {sync: 33e3, async: 58e3},
	"fastapi":           {sync: 23e3, async: 38e3, held: 18e3, p50: 2.9, p99: 13.1},
	"fastapi-uvloop":    {sync: 31e3, async: 55e3},
	"gorilla":           {sync: 92e3, async: 210e3, held: 210e3, p50: 0.8, p99: 2.1},
	"coder":             {sync: 95e3, async: 223e3, held: 210e3, p50: 0.7, p99: 1.9},
	"netty":             {sync: 128e3, async: 356e3, held: 300e3, p50: 0.6, p99: 1.5},
	"tomcat":            {sync: 61e3, async: 118e3, held: 52e3, p50: 1.8, p99: 7.6},
}

// baseline is the row every ratio is taken against, here and in the
// report: the minimal gorilla/websocket server.
const baseline = "gorilla"
