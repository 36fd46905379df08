// Package env is the bench's environment: the Redis servers it starts
// (or is given with -addrs) and reaches, the etcd, ZooKeeper and
// PostgreSQL servers its locks on other systems use, and the process
// helpers (CPU time, holds, sleeps) the speed runner and the fault
// scoreboard share. It imports nothing of the bench but its registry.
package env
