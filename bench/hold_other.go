//go:build !linux

package main

import "time"

// holdFor keeps the lock for d. See hold_linux.go for why Linux does not
// always use time.Sleep.
func holdFor(d time.Duration, _ bool) { time.Sleep(d) }
