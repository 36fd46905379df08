package main

import (
	"syscall"
	"time"
)

// holdFor keeps the lock for d by blocking this goroutine's thread in
// nanosleep(2), which wakes within tens of microseconds of d.
//
// time.Sleep does not: the Go runtime waits for timers in epoll_wait,
// whose timeout is in whole milliseconds (runtime/netpoll_epoll.go rounds
// anything under 1 ms up to 1 ms). When the process goes idle partway
// through a 1 ms sleep (it handled some other client's reply 0.6 ms in),
// the sleep ends a full millisecond after that moment: 1.6 ms. The bench
// runs every client in one process, so a lock whose other clients do work
// during a hold (a releaser finishing its Unlock on five nodes, a waiter
// re-queueing) had its holds stretched by up to 1 ms, while a lock whose
// waiters sleep through the hold did not: a measure of the runtime's timer
// granularity, not of the lock. Real clients are separate processes.
// prSetTimerslack is PR_SET_TIMERSLACK from <linux/prctl.h>.
const prSetTimerslack = 29

func holdFor(d time.Duration) {
	// The default timer slack lets the kernel end the sleep up to 50 µs
	// late; a hold is a measurement, so ask for 1 ns on this thread.
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1, 0)
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var left syscall.Timespec
		err := syscall.Nanosleep(&ts, &left)
		if err != syscall.EINTR {
			return
		}
		ts = left
	}
}
