//go:build unix && !linux

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// pollEvery is how often WaitState runs ps(1).
const pollEvery = 5 * time.Millisecond

// reaperScript is the reaper's program. Each line on its stdin is
// "<pgid> <name>": a process group this process started, led by a program
// called name. At EOF (the parent is gone) it kills each group whose leader
// is still that program, so that a recycled pid is never hit.
const reaperScript = `groups=""
while read -r pg name; do groups="$groups $pg:$name"; done
for g in $groups; do
	pg=${g%%:*}; name=${g#*:}
	comm=$(ps -o comm= -p "$pg" 2>/dev/null) || continue
	case "$comm" in *"$name") kill -KILL -"$pg" 2>/dev/null;; esac
done`

var (
	reaperOnce sync.Once
	reaperErr  error
	reaperMu   sync.Mutex // serializes writes to reaperIn
	reaperIn   *os.File   // the write end of the reaper's stdin; never closed
)

// startReaper starts this process's reaper. It is never waited for: it
// exits after this process does.
func startReaper() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	sh := exec.Command("/bin/sh", "-c", reaperScript)
	sh.Stdin = r
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // out of reach of our group signals
	if err := sh.Start(); err != nil {
		r.Close()
		w.Close()
		return fmt.Errorf("proc: start the reaper: %w", err)
	}
	r.Close()
	reaperIn = w
	return nil
}

func start(cmd *exec.Cmd) error {
	reaperOnce.Do(func() { reaperErr = startReaper() })
	if reaperErr != nil {
		return reaperErr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	reaperMu.Lock()
	defer reaperMu.Unlock()
	if _, err := fmt.Fprintf(reaperIn, "%d %s\n", cmd.Process.Pid, filepath.Base(cmd.Path)); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return fmt.Errorf("proc: tell the reaper about pid %d: %w", cmd.Process.Pid, err)
	}
	return nil
}

// state asks ps(1) for pid's state; its first letter is the scheduler
// state (I, R, S, T, U, Z).
func state(pid int) string {
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(out))
	if s == "" {
		return ""
	}
	return s[:1]
}
