//go:build !race

package echo_test

const raceEnabled = false
