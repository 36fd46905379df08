package rig_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/proc"
	"github.com/locklab/locklab/internal/rig"
)

// closeGone closes c and fails the test if that fails or if any of pids
// is still a running rig server after it (a reaped process is gone; a
// zombie is not running).
func closeGone(t *testing.T, c interface{ Close() error }, pids []int) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	strays, err := rig.SystemStrays()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		if slices.Contains(strays, p) {
			t.Errorf("pid %d still running after Close (SystemStrays() = %v)", p, strays)
		}
		if s := proc.State(p); s != "" && s != "Z" {
			t.Errorf("pid %d in state %q after Close; want gone", p, s)
		}
	}
}

// wantListed fails the test unless [rig.SystemStrays] lists every one of
// pids as a running rig server.
func wantListed(t *testing.T, pids ...int) {
	t.Helper()
	strays, err := rig.SystemStrays()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		if !slices.Contains(strays, p) {
			t.Errorf("SystemStrays() = %v; want it to list pid %d", strays, p)
		}
	}
}

// childrenOf returns the pids of the running rig servers whose parent is
// pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	strays, err := rig.SystemStrays()
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, p := range strays {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces.
		rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// waitNewLeader polls leader until it names a server other than old, and
// fails the test if none does within 30s; done says what was done to old
// ("pausing").
func waitNewLeader[S comparable](t *testing.T, leader func() (S, error), old S, done string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := leader()
		if err == nil && l != old {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new leader 30s after %s %v (last: %v, %v)", done, old, l, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEtcdClusterFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, err := rig.NewEtcd(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if v, err := e.Version(ctx); err != nil || v == "" {
		t.Fatalf("Version() = %q, %v; want a version", v, err)
	}
	var pids []int
	for _, m := range e.Members() {
		pids = append(pids, m.Pid())
	}
	wantListed(t, pids...)

	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A paused leader is replaced.
	if err := leader.Pause(); err != nil {
		t.Fatal(err)
	}
	waitNewLeader(t, func() (*rig.EtcdMember, error) { return e.Leader(ctx) }, leader, "pausing")
	if err := leader.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}

	// A killed member comes back on the same ports with its data.
	m := e.Members()[0]
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	// (Not "nothing answers on its port": another test binary may take a
	// freed port at once.)
	if m.Running() || m.Pid() != 0 {
		t.Fatalf("%s still running after Kill", m)
	}
	if err := e.WaitHealthy(ctx); err != nil {
		t.Fatalf("two of three members: %v", err)
	}
	if err := m.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	pids = append(pids, m.Pid())
	if err := e.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	closeGone(t, e, pids)
}

func TestZooKeeperFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	z, err := rig.NewZooKeeper(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	s := z.Servers()[0]
	if mode, err := s.Mode(ctx); err != nil || mode != "standalone" {
		t.Fatalf("Mode() = %q, %v; want standalone", mode, err)
	}
	if v, err := z.Version(ctx); err != nil || v == "" {
		t.Fatalf("Version() = %q, %v; want a version", v, err)
	}
	pids := []int{s.Pid()}
	wantListed(t, pids...)
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Mode(ctx); err == nil {
		t.Error("a paused server answered srvr")
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	pids = append(pids, s.Pid())
	closeGone(t, z, pids)
}

func TestZooKeeperEnsemble(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	z, err := rig.NewZooKeeper(ctx, 3, rig.WithZooKeeperForTests())
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	leader, err := z.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, s := range z.Servers() {
		pids = append(pids, s.Pid())
	}
	// The leader dies: the other two elect one of them.
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	waitNewLeader(t, func() (*rig.ZKServer, error) { return z.Leader(ctx) }, leader, "killing")
	if err := leader.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if mode, err := leader.Mode(ctx); err != nil || mode != "follower" {
		t.Errorf("restarted old leader: Mode() = %q, %v; want follower", mode, err)
	}
	pids = append(pids, leader.Pid())
	closeGone(t, z, pids)
}

func TestPostgresFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, err := rig.NewPostgres(ctx, rig.WithPostgresSettings("idle_in_transaction_session_timeout=5s"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pid := p.Pid()
	wantListed(t, pid)
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if p.Running() || proc.State(pid) != "" && proc.State(pid) != "Z" {
		t.Fatal("postmaster still running after Kill")
	}
	if err := p.Restart(ctx); err != nil { // crash recovery; Restart waits until it accepts a login
		t.Fatal(err)
	}
	if !p.Running() || p.Pid() == pid {
		t.Fatalf("after Restart: running %v, pid %d (was %d); want a new postmaster", p.Running(), p.Pid(), pid)
	}
	family := append(childrenOf(t, p.Pid()), p.Pid())
	if len(family) < 3 {
		t.Errorf("postmaster %d has processes %v; want it and its helpers (checkpointer, writer, ...)", p.Pid(), family)
	}
	closeGone(t, p, append(family, pid))
}

func TestPostgresBadSetting(t *testing.T) {
	if _, err := rig.NewPostgres(context.Background(), rig.WithPostgresSettings("fsync")); err == nil {
		t.Fatal(`NewPostgres(WithPostgresSettings("fsync")) = nil error; want one`)
	}
	if _, err := rig.NewEtcd(context.Background(), 0); err == nil {
		t.Fatal("NewEtcd(0 members) = nil error; want one")
	}
	if _, err := rig.NewZooKeeper(context.Background(), 0); err == nil {
		t.Fatal("NewZooKeeper(0 servers) = nil error; want one")
	}
}
