//go:build !linux

package proc

import (
	"errors"
	"os/exec"
)

// startAs is Linux-only: elsewhere a child that runs as another user could
// not be made to die with its parent.
func startAs(*exec.Cmd, uint32, uint32) error {
	return errors.New("proc: starting a process as another user is supported on Linux only")
}
