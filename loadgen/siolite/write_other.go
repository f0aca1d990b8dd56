//go:build !unix

package siolite

// writeNow leaves every write to the loop where there is no unix.Write.
func writeNow(_ int, b []byte) (rest []byte, err error) { return b, nil }
