// Package readme tests the repository's Markdown files against the
// repository: README.md stays a front door (at most 250 lines), every
// relative link and backticked repository path in any *.md exists, every
// `make X` names a Makefile target and every `go doc ./PKG` a package, and
// the README's fenced blocks marked runnable (an HTML comment
// "<!-- runnable -->" on the line before the fence) really run: each
// `make run-server` in such a block is started on free loopback ports and
// the block's other commands run against it, with 8080 and 9100 replaced by
// the ports it got; each must exit 0, or with a status the marker allows
// ("<!-- runnable exit=0,1 -->": an example whose point is a failed run).
// A command whose tool is not installed is skipped with
// the reason (outside CI; in CI, make deps has installed every tool but
// websocket-bench, which is never installed). It has no code of its own.
package readme
