// Package proc starts child processes that cannot outlive the process that
// started them, and signals and inspects them.
//
// Every child is started in its own process group, so a whole group can be
// signalled. How a child dies with its parent depends on the system:
//
//   - Linux: each child gets PR_SET_PDEATHSIG = SIGKILL. The kernel
//     delivers the death signal when the OS thread that forked the child
//     exits, not when the process does (golang/go#27505), so all children
//     are forked from one goroutine locked to one OS thread that lives as
//     long as the process (proc_linux.go).
//   - macOS and the other BSDs have no parent-death signal. A reaper, one
//     /bin/sh per parent process, reads the process groups the parent
//     started on a pipe; when the parent dies, however it dies, the pipe
//     closes and the reaper SIGKILLs every group it was told of that is
//     still there (proc_unix.go).
//
// Either way, when the test binary panics, times out or is killed, every
// redis-server and client process it started dies with it.
package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Start starts cmd in a new process group that dies with this process.
// cmd.SysProcAttr must be nil.
func Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr != nil {
		return errors.New("proc: cmd.SysProcAttr must be nil")
	}
	return start(cmd)
}

// StartPiped starts cmd as [Start] does, with two pipes to the child as
// its fds 3 and 4 (cmd.ExtraFiles, which must be nil): the child reads
// fd 3 and writes fd 4. It returns this process's ends: w writes to the
// child's fd 3, r reads what the child writes to fd 4. The child's ends
// are closed here once it has started; when StartPiped fails, every pipe
// is closed.
func StartPiped(cmd *exec.Cmd) (w, r *os.File, err error) {
	if cmd.ExtraFiles != nil {
		return nil, nil, errors.New("proc: cmd.ExtraFiles must be nil")
	}
	childIn, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	r, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		w.Close()
		return nil, nil, err
	}
	cmd.ExtraFiles = []*os.File{childIn, childOut}
	err = Start(cmd)
	childIn.Close()
	childOut.Close()
	if err != nil {
		w.Close()
		r.Close()
		return nil, nil, err
	}
	return w, r, nil
}

// Piped returns, in a child started by [StartPiped], its ends of the two
// pipes: r reads fd 3, what the parent writes, and w writes fd 4, what the
// parent reads.
func Piped() (r, w *os.File) {
	return os.NewFile(3, "driver-in"), os.NewFile(4, "driver-out")
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

// State reports the scheduler state letter of pid ("R", "S", "T" for
// stopped, "Z" for a zombie...), or "" when the process is gone.
func State(pid int) string { return state(pid) }

// WaitState polls pid's state until it is want or timeout passes. It is
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
		time.Sleep(pollEvery)
	}
}
