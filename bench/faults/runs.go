package faults

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/internal/history"
)

// runPause: schedule 1.
func runPause(ev *Event) error {
	if err := ev.start(); err != nil {
		return err
	}
	finished := ev.beginA()
	ev.each(func(r *FaultRun) {
		if err := r.child.freeze(); err != nil {
			r.failed = "SIGSTOP: " + shortErr(err)
			return
		}
		r.fault("SIGSTOP A (frozen in its critical section)")
		r.contend(ev.Sch.faultWindow()+ev.Sch.TTL+2*time.Second, finished[r], func() {
			r.fault("SIGCONT A (resumes)")
			_ = r.child.thaw()
			r.a.Release()
		})
	})
	return nil
}

// runKill: schedule 9.
func runKill(ev *Event) error {
	if err := ev.start(); err != nil {
		return err
	}
	ev.beginA()
	ev.each(func(r *FaultRun) {
		if err := r.child.kill(); err != nil {
			r.failed = "SIGKILL: " + shortErr(err)
			return
		}
		r.fault("kill -9 A (inside its critical section)")
		r.hist.Add(history.Event{Client: "A", Kind: history.Exit, Text: "(killed)"})
		r.contend(4*ev.Sch.TTL+3*time.Second, nil, nil)
	})
	return nil
}

// runLatency: schedule 6.
func runLatency(ev *Event) error {
	if err := ev.start(); err != nil {
		return err
	}
	finished := ev.beginA()
	ev.each(func(r *FaultRun) {
		lease := r.Lease()
		lat := 2 * lease
		for _, p := range r.aNet {
			p.SetLatency(lat)
		}
		r.fault("A's connections: +%v each way (its lease is %v)", lat, lease)
		r.a.Release() // A writes now: the write lands lat later
		r.contend(ev.Sch.faultWindow()+ev.Sch.TTL+2*time.Second, nil, nil)
		select {
		case <-finished[r]:
		case <-ev.ctx.Done():
		}
		for _, p := range r.aNet {
			p.SetLatency(0)
		}
	})
	return nil
}

// runRestart: schedule 5.
func runRestart(ev *Event) error {
	if err := ev.start(); err != nil {
		return err
	}
	nodes := []int{0}
	if ev.index%2 == 1 {
		nodes = append(nodes, 1+ev.rng.IntN(faultLockServers-1))
	}
	return ev.standard(func() error {
		var wg sync.WaitGroup
		errs := make([]error, len(nodes))
		for i, n := range nodes {
			wg.Go(func() { errs[i] = ev.setup.Srv.Nodes[n].Restart(ev.ctx, false) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		names := make([]string, len(nodes))
		for i, n := range nodes {
			names[i] = "server " + strconv.Itoa(n)
		}
		ev.faultAll("%s restarted empty (SIGKILL, no persistence)", strings.Join(names, " and "))
		return nil
	})
}

// clockJump is how far server 0's clock jumps in schedule 8.
const clockJump = 10 * time.Second

// runClock: schedule 8.
func runClock(ev *Event) error {
	if err := ev.start(); err != nil {
		return err
	}
	return ev.standard(func() error {
		n, err := jumpClock(ev.ctx, ev.setup.Srv.Admin[0], "*"+ev.tag+"*", clockJump)
		if err != nil {
			return err
		}
		ev.faultAll("server 0's clock jumps %v forward (modeled: %d keys' TTLs cut by %v)", clockJump, n, clockJump)
		return nil
	})
}
