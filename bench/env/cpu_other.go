//go:build !unix

package env

import "time"

// ProcessCPU returns -1: this system's process CPU time is not read here
// (see cpu_unix.go), and the client CPU column shows "–".
func ProcessCPU() time.Duration { return -1 }
