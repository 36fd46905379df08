// Package proc starts child processes that cannot outlive the process that
// started them.
//
// Every child is started in its own process group (so a whole group can be
// signalled) with PR_SET_PDEATHSIG set to SIGKILL. The kernel delivers the
// death signal when the OS thread that forked the child exits, not when the
// process does (golang/go#27505), so all children are forked from one
// goroutine locked to one OS thread that lives as long as the process. When
// the test binary panics, times out or is killed, that thread dies with it
// and the kernel kills every redis-server and client process it started.
package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

type startReq struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	once   sync.Once
	starts chan startReq
)

// spawner runs on a dedicated OS thread for the life of the process.
func spawner() {
	runtime.LockOSThread() // never unlocked: the thread must outlive every child
	for r := range starts {
		r.done <- r.cmd.Start()
	}
}

// Start starts cmd in a new process group with SIGKILL as its parent-death
// signal. cmd.SysProcAttr must be nil.
func Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr != nil {
		return errors.New("proc: cmd.SysProcAttr must be nil")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	once.Do(func() {
		starts = make(chan startReq)
		go spawner()
	})
	done := make(chan error, 1)
	starts <- startReq{cmd: cmd, done: done}
	return <-done
}

// Signal sends sig to the process group led by cmd's process.
func Signal(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return errors.New("proc: process not started")
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("proc: signal %v to group %d: %w", sig, cmd.Process.Pid, err)
	}
	return nil
}

// State reports the scheduler state letter of pid from /proc ("R", "S",
// "T" for stopped, "Z"...), or "" when the process is gone.
func State(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// Format: pid (comm) S ...; comm may contain spaces and parentheses.
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' && i+2 < len(b) {
			return string(b[i+2])
		}
	}
	return ""
}

// WaitState polls /proc until pid is in state want or timeout passes. It is
// used after SIGSTOP, whose delivery is asynchronous.
func WaitState(pid int, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		got := State(pid)
		if got == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("proc: pid %d in state %q after %v; want %q", pid, got, timeout, want)
		}
		time.Sleep(time.Millisecond)
	}
}
