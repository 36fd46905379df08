//go:build !unix

package main

import "time"

// processCPU returns -1: this system's process CPU time is not read here
// (see cpu_unix.go), and the client CPU column shows "–".
func processCPU() time.Duration { return -1 }
