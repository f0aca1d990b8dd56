//go:build !unix

package proc

import "errors"

// SelfCPUSeconds is not measured on this platform.
func SelfCPUSeconds() float64 { return 0 }

// OpenFiles is not known on this platform.
func OpenFiles() (Files, error) { return Files{}, errors.New("no open-files limit on this platform") }
