package scenario

import "github.com/knowngood/knowngood/loadgen/internal/verdict"

// Heading opens every scenario's report: who measured, and what.
type Heading struct {
	Client  string `json:"client"`  // the client library
	Version string `json:"version"` // its version
	URL     string `json:"url"`     // the target; a merged run's shards' URLs, comma-separated
}

// Judgment ends every scenario's report: the target's own view of the run
// (S, the scenario's), whose the problems were, a shard's part for
// 'loadgen merge', and each -threshold's result. Embedded, its fields
// stand in the report's JSON object as its own.
type Judgment[S any] struct {
	// Server is the target's view; nil when it gave none, and
	// ServerError then says why.
	Server      *S     `json:"server,omitempty"`
	ServerError string `json:"server_error,omitempty"`
	// Verdicts say whose the problems were, client's or server's.
	Verdicts []verdict.Verdict `json:"verdicts"`
	// Shard: a sharded run's part for 'loadgen merge'.
	Shard *ShardPart `json:"shard,omitempty"`
	// Thresholds: each -threshold and whether it held.
	Checks
}
