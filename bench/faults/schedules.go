package faults

import (
	"slices"
	"time"

	"github.com/locklab/locklab/bench/htmlreport"

	"github.com/locklab/locklab/bench/registry"
)

// The fault schedules, as data: adding one is one entry in schedules (its
// id, number, title, what it does, lease, where it applies) and its run
// function (runs.go for the holder's and servers' faults,
// cmd.go for faults of single commands, systems.go for the
// faults of etcd, ZooKeeper and PostgreSQL). Nothing else names a
// schedule: the reports take their columns from this table, and a lock's
// claims (registry) name the schedules it claims to survive, which
// TestRegistryTraits checks against this table.

// Schedule is one fault schedule.
type Schedule struct {
	ID      string // the -faults name and the column key
	N       int    // its number: the column order in faults.md and the README
	Title   string // the column title
	What    string // one sentence: what is done, for faults.md
	Modeled bool   // the fault is modeled, not real
	TTL     time.Duration
	// parallel is how many events may run at once: faults confined to one
	// run's own clients and servers can overlap; server-wide ones cannot.
	parallel int
	// needsRig, if set, says why the schedule runs only on servers the rig
	// started (it kills or restarts them, or starts PgBouncer), not -addrs.
	needsRig string
	// commandFault: the schedule faults the lock's single commands, each in
	// turn (found once by watching a fault-free run: cmd.go).
	commandFault bool
	// Liveness: a stuck run breaks a claim to survive the schedule, as an
	// unsafe run does (the holder killed: the claim is that others get in).
	Liveness bool
	// tx: the schedule applies only to a lock whose holder works in the
	// lock's transaction (registry.TxLocker, Lock.Transactional).
	// stuckAfter is the longest stall that still counts as live, for a
	// lock whose lease is ttl (scaled for a longer one: faultRun.stuckAfter).
	StuckAfter time.Duration
	// window, if set, replaces the default window (see window).
	window time.Duration
	// child: A runs in a child process.
	child bool
	// proxied: every client reaches the servers through its own fault
	// proxies.
	proxied bool
	tx      bool
	// on lists the systems (registry.SysRedis, registry.SysEtcd, registry.SysZooKeeper, registry.SysPostgres)
	// the schedule applies to; a lock on none of them gets "does not
	// apply" in its cell. Nil means Redis only.
	on []string
	// runs, if set, replaces -fault-runs for this schedule when it is
	// smaller (a schedule whose every event pays a server's crash).
	runs int
	// run performs one event.
	run func(ev *Event) error
	// notFor, if set, says why the schedule cannot run a lock it applies
	// to (its API lacks what the fault needs), shown as the lock's cell.
	notFor func(im *registry.Lock) string
}

// needsControl is needsRig for the schedules that kill, restart or
// reconfigure server processes.
const needsControl = "needs control of the server processes (rig servers, not -addrs)"

// Schedules are issue 16's nine, for the locks on Redis, in their order,
// then issue 34's four for the locks on etcd, ZooKeeper and PostgreSQL,
// then issue 38's lost batch (batch.go), for the locks on Redis.
var Schedules []*Schedule

func init() {
	all := []string{registry.SysRedis, registry.SysEtcd, registry.SysZooKeeper, registry.SysPostgres}
	others := []string{registry.SysEtcd, registry.SysZooKeeper, registry.SysPostgres}
	Schedules = []*Schedule{
		{ID: "pause", N: 1, Title: "holder paused past its lease", TTL: time.Second, parallel: 2, child: true, on: all,
			StuckAfter: 4 * time.Second, window: time.Second + window,
			What: "A, a child process, is frozen with SIGSTOP inside its critical section until its lease has run out and B has written (or for the window); then SIGCONT, and A finishes its work.",
			run:  runPause},
		{ID: "lost-reply", on: all, commandFault: true, N: 2, Title: "lost reply, library retry", TTL: time.Second, parallel: 2, proxied: true,
			StuckAfter: 4 * time.Second,
			What:       "A, B and C take the lock one after the other; the proxy delivers one of the lock's commands to the server and loses its reply (closes the client's connection): each of the lock's commands in turn, run by run (found by watching a fault-free run), on every server of the lock. The libraries retry on their default options.",
			run:        runLostReply},
		{ID: "late", on: all, commandFault: true, N: 3, Title: "command delivered late", TTL: time.Second, parallel: 2, proxied: true,
			StuckAfter: 4 * time.Second,
			What:       "A, B and C take the lock one after the other; the proxy holds one of the lock's commands in the network, each in turn as in schedule 2, with go-redis's retries of it (4 copies), until the client has given up, and delivers them while another client holds the lock.",
			run:        runLate},
		{ID: "failover", N: 4, Title: "failover before replication", TTL: 15 * time.Second, parallel: 3, needsRig: needsControl,
			StuckAfter: 10 * time.Second, window: 4 * time.Second,
			What: "replication to the replica is held back in the network; A takes the lock on the primary; the primary is killed (SIGKILL); three sentinels promote the replica, which never saw the lock; B and C ask the new primary (through Sentinel). 5-node locks have one of their five nodes behind this Sentinel group.",
			run:  runFailover},
		{ID: "restart", N: 5, Title: "nodes restart empty", TTL: 5 * time.Second, parallel: 1, needsRig: needsControl,
			StuckAfter: 4 * time.Second,
			What:       "after A took the lock, server 0 (every single-server lock's) restarts at once without its data (no persistence), and in odd runs one more of the five, chosen by the seed.",
			run:        runRestart},
		{ID: "latency", on: all, N: 6, Title: "latency past the TTL", TTL: time.Second, parallel: 3, proxied: true,
			StuckAfter: 4 * time.Second,
			What:       "once A holds the lock and has read the resource, its connections (to the lock servers and the resource) gain twice its lease each way (2 s for the 1 s lease; 4 s for etcd, whose shortest lease is 2 s); A writes at once, so the write lands that much later.",
			run:        runLatency},
		{ID: "eviction", N: 7, Title: "eviction under memory pressure", TTL: 5 * time.Second, parallel: 1, needsRig: needsControl,
			StuckAfter: 4 * time.Second,
			What:       "the lock servers run with maxmemory-policy allkeys-lru; a second after A took the lock, a client fills memory until every lock key has been evicted (or 3x maxmemory was written).",
			run:        runEviction},
		{ID: "clock", N: 8, Title: "clock jump on one node", TTL: 5 * time.Second, parallel: 1, Modeled: true,
			StuckAfter: 4 * time.Second,
			What:       "server 0's clock jumps 10 s forward. Modeled, as lab 08 does: redis-server will not run under libfaketime, and Redis keeps expiries as wall-clock times, so the jump is every key's remaining TTL on that server cut by 10 s (keys with less left expire at once). The model does not move the server's clock for later commands: a lock that sets absolute expiry times (rueidislock's SET PXAT) would see them in the past on a jumped server, which it does not show.",
			run:        runClock},
		{ID: "kill", on: all, Liveness: true, N: 9, Title: "holder killed", TTL: time.Second, parallel: 2, child: true,
			StuckAfter: 3 * time.Second,
			What:       "A, a child process, is killed with SIGKILL inside its critical section; B and C want the lock. Liveness: how long until the next holder gets in (stuck: more than 3 s, three leases; 6 s for etcd, whose shortest lease is 2 s).",
			run:        runKill},
		{ID: "crash", N: 10, Title: "server or leader killed and restarted", TTL: 2 * time.Second, parallel: 1, needsRig: needsControl, on: others,
			StuckAfter: 6 * time.Second, window: 4 * time.Second, runs: 10,
			What: "after A took the lock, etcd's leader, ZooKeeper's leader and the PostgreSQL server are killed (SIGKILL) and restarted on their data (fsync on), at once; B and C want the lock meanwhile.",
			run:  runCrash},
		{ID: "expiry", N: 11, Title: "session expiry mid-Lock", TTL: time.Second, parallel: 2, proxied: true, on: others,
			StuckAfter: 4 * time.Second,
			What:       "C holds the lock; A's Lock waits behind C (its claim is in line); A's session ends on the server: etcd revokes the claim's lease, ZooKeeper expires A's session (A is cut off for three session timeouts, then healed), PostgreSQL terminates A's backend (pg_terminate_backend). Then C releases and B wants the lock; A, as a plain worker, calls Lock again after an error.",
			run:        runExpiry},
		{ID: "pooler", N: 12, Title: "PgBouncer in front", TTL: time.Second, parallel: 2, on: []string{registry.SysPostgres}, needsRig: "needs PgBouncer started by the rig",
			StuckAfter: 4 * time.Second,
			What:       "A, B and C reach PostgreSQL through PgBouncer 1.18 (runs in turn in transaction, session and statement pooling; PgBouncer's default pool size) and take the lock one after the other, as in schedule 2 without faults. A lock that refuses the pooler (pglock refuses statement pooling) is counted as refused, safe.",
			run:        runPooler},
		{ID: "isolation", N: 13, Title: "isolation level", TTL: time.Second, parallel: 2, on: []string{registry.SysPostgres}, tx: true,
			StuckAfter: 4 * time.Second,
			What:       "default_transaction_isolation is repeatable read (even runs) or serializable (odd runs); A, B and C take the row lock one after the other and append to a ledger in PostgreSQL through the lock's transaction (Tx): read how many entries there are, append the next. An entry committed with a number already taken is a lost update.",
			run:        runIsolation},
		{ID: "batch-lost", N: 14, Title: "batch lost, AutoPipeliner resends", TTL: 3 * time.Second, parallel: 2,
			StuckAfter: 2 * time.Second, What: batchLostWhat, notFor: noPipeliner, run: runBatchLost},
	}
}

// faultWindow is the schedule's window (see window).
func (s *Schedule) faultWindow() time.Duration {
	if s.window > 0 {
		return s.window
	}
	return window
}

// ScheduleIDs returns every schedule's id, in order.
func ScheduleIDs() []string {
	var out []string
	for _, s := range Schedules {
		out = append(out, s.ID)
	}
	return out
}

// ScheduleByID returns the schedule with id.
func ScheduleByID(id string) *Schedule {
	for _, s := range Schedules {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// NotApplicable is a cell's notRun when its schedule does not apply to the
// lock (a Redis server's failover for a lock on etcd).
const NotApplicable = htmlreport.NotApplicable

// AppliesTo reports whether s applies to im.
func (s *Schedule) AppliesTo(im *registry.Lock) bool {
	on := s.on
	if on == nil {
		on = []string{registry.SysRedis}
	}
	return slices.Contains(on, registry.SystemOf(im)) && (!s.tx || im.Transactional)
}
