package env

import (
	"syscall"
	"time"
)

// HoldFor keeps the lock for d. Where holds cannot overlap (a cell on one
// key: at most one client holds it), it blocks this goroutine's thread in
// nanosleep(2), which wakes within tens of microseconds of d; where they
// can (the keys cell, many clients over many keys), it uses time.Sleep.
//
// time.Sleep is imprecise when the process goes idle: the Go runtime waits
// for timers in epoll_wait, whose timeout is in whole milliseconds
// (runtime/netpoll_epoll.go rounds anything under 1 ms up to 1 ms). When
// the process goes idle partway through a 1 ms sleep (it handled some
// other client's reply 0.6 ms in), the sleep ends a full millisecond after
// that moment: 1.6 ms. On one key, a lock whose other clients do work
// during a hold (a releaser finishing its Unlock on five nodes, a waiter
// re-queueing) had its holds stretched by up to 1 ms, while a lock whose
// waiters sleep through the hold did not: a measure of the runtime's timer
// granularity, not of the lock. Real clients are separate processes.
//
// nanosleep is precise, but a goroutine in a blocking syscall keeps its P
// (one of GOMAXPROCS, 2 on the 2-core machine) until the runtime's sysmon
// takes it back; sysmon leaves a P parked in a syscall for up to 10 ms
// while another P is idle, and once it has backed off it polls the network
// only every 10 ms. One holder at a time parks one P. 64 holders at once
// park every P, and replies then sit unread: in the keys cell (64 clients,
// hold 1ms), 8 of 103 rounds of the single-server Redis locks over three
// runs fell to about 1650 acquisitions/s with a median wait of 18-20 ms
// (raw, raw+receipt, redislock, correct-poll), and the others ran at about
// 0.6 times the rate they reach with time.Sleep (in 70 rounds of which
// none stalled). There time.Sleep stretches the go-redis locks' 1 ms holds
// alike, to 1.25-1.45 ms; rueidislock, whose client keeps goroutines of
// its own busy, measured 1.01-1.26 ms over five runs. The report's held p50
// column shows each lock's. (One clock goroutine sleeping for every holder
// parks one P too, but measured 1.37-1.66 ms, and no more alike.)
func HoldFor(d time.Duration, overlapping bool) {
	if overlapping {
		time.Sleep(d)
		return
	}
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

// prSetTimerslack is PR_SET_TIMERSLACK from <linux/prctl.h>.
const prSetTimerslack = 29
