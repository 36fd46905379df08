package rig

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// SystemStrays returns the pids of running etcd, ZooKeeper and PostgreSQL
// processes started by the rig (by any process, not just this one). etcd
// members and ZooKeeper's JVMs are started with the process title
// "locklab-rig ..."; PostgreSQL cannot be renamed (it finds its own
// binary through argv[0]), so its postmaster carries
// "cluster_name=locklab-rig" in its arguments and every process it starts
// has "postgres: locklab-rig: ..." as its title. make strays reports those
// of them that outlived their parent.
func SystemStrays() ([]int, error) { return processes(isSystemServer) }

// processes returns the pids of the running processes whose command line
// (/proc/<pid>/cmdline) match accepts.
func processes(match func(cmdline []byte) bool) ([]int, error) {
	return procFiles("cmdline", func(_ int, cmdline []byte) bool { return match(cmdline) })
}

// procFiles returns the pids of the processes whose file /proc/<pid>/name
// match accepts; a process whose file cannot be read (it has gone) is
// skipped.
func procFiles(name string, match func(pid int, b []byte) bool) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), name))
		if err != nil {
			continue
		}
		if match(pid, b) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// isSystemServer reports whether a /proc/<pid>/cmdline is that of an
// etcd, ZooKeeper or PostgreSQL process started by the rig.
func isSystemServer(cmdline []byte) bool {
	return bytes.HasPrefix(cmdline, []byte(procMarker+"\x00")) ||
		bytes.HasPrefix(cmdline, []byte("postgres: "+procMarker+": ")) ||
		bytes.Contains(cmdline, []byte("\x00cluster_name="+procMarker+"\x00"))
}
