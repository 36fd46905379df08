// Package rig starts and controls real Redis servers for locklab's tests,
// labs and bench.
//
// A [Node] is one redis-server process on a free loopback port (never 6379)
// with its own temporary directory and log file, started with
// --save "" --appendonly no (AOF with appendfsync always is an option) and
// --enable-debug-command local. It is ready when PING answers. Faults are
// real: [Node.Kill] sends SIGKILL, [Node.Pause] SIGSTOP, [Node.Restart]
// starts a new process on the same port with or without the old data,
// [Node.ReplicaOf] waits for master_link_status:up and [Node.Promote] runs
// REPLICAOF NO ONE.
//
// Servers come from a provider, chosen once per process:
//
//   - external, when LOCKLAB_REDIS_ADDRS lists servers ("host:port,..."): no
//     process control; tests that need it call [RequireControl] and skip
//     with the reason;
//   - exec, the default, when redis-server is on PATH (or named by
//     LOCKLAB_REDIS_SERVER);
//   - docker, when redis-server is missing and a Docker engine answers, in
//     binaries built with -tags docker (see docker.go).
//
// LOCKLAB_PROVIDER=exec or LOCKLAB_PROVIDER=docker forces one (docker
// also where redis-server exists); the error then says what is missing.
//
// With none of them, [Start] fails the test with a message saying how to
// install Redis (make deps). It never skips to green.
//
// No redis-server outlives the process that started it: servers run in
// their own process group with SIGKILL as parent-death signal (package
// internal/proc), and Close sends SIGCONT, kills the group, waits and
// removes the directory. Every server's process title carries the marker
// "locklab-rig", so a leak check can find strays (see [Strays]).
//
// # Other systems
//
// The rig also runs the servers of the locks beyond Redis, as processes of
// their own, always from binaries on this machine (there is no external or
// Docker provider for them): [Etcd], a cluster of etcd members (etcd.go);
// [ZooKeeper], a standalone server or an ensemble (zookeeper.go); and
// [Postgres], a PostgreSQL server run as the postgres user when the tests
// run as root, since it refuses root, and copied from an initdb template
// kept in the temporary directory (postgres.go). The rig is the parent of
// each and reaps it; faults are real (Kill, Pause, Restart, and the
// faultproxy in front of a client port). Without a binary, starting one
// fails with an install hint ([EtcdInstallHint], [ZooKeeperInstallHint],
// [PostgresInstallHint]; make deps installs them on Debian). Their
// processes are found by [SystemStrays]; [MainWith] is the TestMain of
// packages that share such servers.
package rig
