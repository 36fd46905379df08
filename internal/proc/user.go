package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
)

// StartAs is [Start] for a child that must run as another user: it starts
// cmd as uid and gid (with no supplementary groups), in a new process
// group, with SIGKILL as its parent-death signal. The kernel clears that
// signal when a process changes its user, but Go's fork sets it after the
// change, so the child still dies with its parent. Only root may start a
// process as another user, and only on Linux; as this process's own user
// it is [Start]. cmd.SysProcAttr must be nil.
//
// PostgreSQL is the case in point: its server refuses to run as root.
func StartAs(cmd *exec.Cmd, uid, gid uint32) error {
	if cmd.SysProcAttr != nil {
		return errors.New("proc: cmd.SysProcAttr must be nil")
	}
	if int(uid) == os.Geteuid() && int(gid) == os.Getegid() {
		return Start(cmd)
	}
	return startAs(cmd, uid, gid)
}

// ServiceUser returns the uid and gid a server that refuses to run as root
// should run as: the named user when this process is root, and this
// process's own ids otherwise. It fails, saying so, when this process is
// root and the user does not exist.
func ServiceUser(name string) (uid, gid uint32, err error) {
	if os.Geteuid() != 0 {
		return uint32(os.Geteuid()), uint32(os.Getegid()), nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, fmt.Errorf("proc: running as root, and there is no user %q to run the server as: %w", name, err)
	}
	id, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("proc: user %q: uid %q: %w", name, u.Uid, err)
	}
	g, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("proc: user %q: gid %q: %w", name, u.Gid, err)
	}
	return uint32(id), uint32(g), nil
}
