//go:build !linux

package main

import "time"

// holdFor keeps the lock for d. See hold_linux.go for why Linux does not
// use time.Sleep.
func holdFor(d time.Duration) { time.Sleep(d) }
