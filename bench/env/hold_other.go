//go:build !linux

package env

import "time"

// HoldFor keeps the lock for d. See hold_linux.go for why Linux does not
// always use time.Sleep.
func HoldFor(d time.Duration, _ bool) { time.Sleep(d) }
