package proc

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// pollEvery is how often WaitState reads /proc.
const pollEvery = time.Millisecond

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

func start(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return spawn(cmd)
}

// spawn starts cmd, its SysProcAttr already set, from the spawner's
// thread (starting the spawner the first time) and returns Start's error.
func spawn(cmd *exec.Cmd) error {
	once.Do(func() {
		starts = make(chan startReq)
		go spawner()
	})
	done := make(chan error, 1)
	starts <- startReq{cmd: cmd, done: done}
	return <-done
}

// state reads the state letter from /proc/<pid>/stat.
func state(pid int) string {
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
