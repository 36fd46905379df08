//go:build unix

package env

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time this process has used so far, user and
// system (getrusage), or -1 when it cannot tell.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
