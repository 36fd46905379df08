package proc

import (
	"os/exec"
	"syscall"
)

// startAs forks cmd from the spawner's thread (see [Start]) with
// credentials; Go's fork sets the parent-death signal after changing them.
func startAs(cmd *exec.Cmd, uid, gid uint32) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
		Credential: &syscall.Credential{Uid: uid, Gid: gid}, // Groups nil: no supplementary groups
	}
	return spawn(cmd)
}
