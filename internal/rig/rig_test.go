package rig_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/proc"
	"github.com/locklab/locklab/internal/rig"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestStartAnswersPingAndIsNotDefaultPort(t *testing.T) {
	n := rig.Start(t)
	ctx := ctxFor(t)
	if err := n.Client().Ping(ctx).Err(); err != nil {
		t.Fatalf("PING = %v; want PONG", err)
	}
	if n.Addr() == "127.0.0.1:6379" {
		t.Fatalf("Addr() = %s; the rig must never use 6379", n.Addr())
	}
	cfg, err := n.Client().ConfigGet(ctx, "appendonly").Result()
	if err != nil || cfg["appendonly"] != "no" {
		t.Fatalf("CONFIG GET appendonly = %v, %v; want no", cfg, err)
	}
	// DEBUG is enabled for local connections (labs use DEBUG SLEEP).
	if err := n.Client().Do(ctx, "DEBUG", "SLEEP", "0").Err(); err != nil {
		t.Fatalf("DEBUG SLEEP 0 = %v; want OK", err)
	}
}

func TestStartNGivesIndependentNodes(t *testing.T) {
	nodes := rig.StartN(t, 3)
	ctx := ctxFor(t)
	seen := map[string]bool{}
	for i, n := range nodes {
		if seen[n.Addr()] {
			t.Fatalf("node %d reuses address %s", i, n.Addr())
		}
		seen[n.Addr()] = true
		if err := n.Client().Set(ctx, "k", i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range nodes {
		if got, _ := n.Client().Get(ctx, "k").Int(); got != i {
			t.Errorf("node %d GET k = %d; want %d", i, got, i)
		}
	}
}

func TestKillMakesNodeUnreachable(t *testing.T) {
	rig.RequireControl(t)
	n := rig.Start(t)
	c := n.Client()
	ctx := ctxFor(t)
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING after Kill succeeded; want an error")
	}
	if n.Pid() != 0 {
		t.Errorf("Pid() after Kill = %d; want 0", n.Pid())
	}
}

func TestPauseBlocksUntilResume(t *testing.T) {
	rig.RequireControl(t)
	n := rig.Start(t)
	c := n.Client()
	ctx := ctxFor(t)
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	if got := proc.State(n.Pid()); got != "T" {
		t.Fatalf("state after Pause = %q; want T (stopped)", got)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := c.Ping(short).Err()
	cancel()
	if err == nil {
		t.Fatal("PING to a paused server answered; want a timeout")
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	// The timed-out connection was discarded; a new one answers.
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Resume = %v; want PONG", err)
	}
}

func TestRestart(t *testing.T) {
	rig.RequireControl(t)
	tests := []struct {
		name     string
		opts     []rig.Option
		keepData bool
		want     bool // key survives
	}{
		{"aof keep data", []rig.Option{rig.WithAOF()}, true, true},
		{"aof drop data", []rig.Option{rig.WithAOF()}, false, false},
		{"no persistence keep dir", nil, true, false},
		{"no persistence", nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := rig.Start(t, tt.opts...)
			c := n.Client()
			ctx := ctxFor(t)
			addr := n.Addr()
			if err := c.Set(ctx, "lock:order", "tok", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if err := n.Restart(ctx, tt.keepData); err != nil {
				t.Fatal(err)
			}
			if n.Addr() != addr {
				t.Fatalf("Restart moved the node from %s to %s", addr, n.Addr())
			}
			_, err := c.Get(ctx, "lock:order").Result()
			got := err == nil
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatalf("GET after restart: %v", err)
			}
			if got != tt.want {
				t.Errorf("key survived Restart(keepData=%v) = %v; want %v", tt.keepData, got, tt.want)
			}
		})
	}
}

func TestReplicaOfAndPromote(t *testing.T) {
	rig.RequireControl(t)
	nodes := rig.StartN(t, 2)
	primary, replica := nodes[0], nodes[1]
	ctx := ctxFor(t)
	if err := replica.ReplicaOf(ctx, primary.Addr()); err != nil {
		t.Fatal(err)
	}
	if err := primary.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// WAIT on the writing connection returns once the replica has it.
	pc := primary.Client()
	if n, err := pc.Wait(ctx, 1, 5000).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v; want 1", n, err)
	}
	rc := replica.Client()
	if got, err := rc.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("replica GET k = %q, %v; want v", got, err)
	}
	if err := rc.Set(ctx, "k", "w", 0).Err(); err == nil {
		t.Fatal("write to a replica succeeded; want READONLY")
	}
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := replica.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rc.Set(ctx, "k", "w", 0).Err(); err != nil {
		t.Fatalf("write after Promote = %v; want OK", err)
	}
}

func TestCloseLeavesNoProcess(t *testing.T) {
	rig.RequireControl(t)
	n, err := rig.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pid := n.Pid()
	if err := n.Pause(); err != nil { // a paused server must die too
		t.Fatal(err)
	}
	strays, err := rig.Strays()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strays, pid) {
		t.Fatalf("Strays() = %v before Close; want it to list %d", strays, pid)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if st := proc.State(pid); st != "" {
		t.Fatalf("process %d in state %q after Close; want gone", pid, st)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Fatalf("process %d still exists after Close", pid)
	}
	if strays, _ := rig.Strays(); slices.Contains(strays, pid) {
		t.Fatalf("Strays() = %v after Close; still lists %d", strays, pid)
	}
}

// TestServersDieWithTestBinary re-runs this test binary as a helper that
// starts a server, prints its pid and then dies (panic, as on a test
// timeout, or SIGKILL). The server must not outlive it.
func TestServersDieWithTestBinary(t *testing.T) {
	rig.RequireControl(t)
	for _, how := range []string{"panic", "sigkill"} {
		t.Run(how, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStartServerThenDie$")
			cmd.Env = append(os.Environ(), "LOCKLAB_RIG_HELPER="+how, "GORACE=atexit_sleep_ms=0")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var pid int
			if _, err := fmt.Fscanf(bufio.NewReader(out), "pid %d\n", &pid); err != nil {
				_ = cmd.Process.Kill()
				t.Fatalf("reading helper's server pid: %v", err)
			}
			if how == "sigkill" {
				_ = cmd.Process.Kill()
			}
			_ = cmd.Wait()
			deadline := time.Now().Add(5 * time.Second)
			for proc.State(pid) != "" {
				if time.Now().After(deadline) {
					t.Fatalf("redis-server %d still alive (state %s) 5s after its test binary died", pid, proc.State(pid))
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}

func TestHelperStartServerThenDie(t *testing.T) {
	how := os.Getenv("LOCKLAB_RIG_HELPER")
	if how == "" {
		t.Skip("helper for TestServersDieWithTestBinary")
	}
	n, err := rig.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("pid %d\n", n.Pid())
	if how == "panic" {
		panic("helper dies without cleanup, as a timed-out test binary does")
	}
	select {} // wait for SIGKILL
}

// TestParallelStartsGetTheirOwnServers: nodes started at the same moment
// never share a port, and each address is answered by the node's own
// process.
func TestParallelStartsGetTheirOwnServers(t *testing.T) {
	rig.RequireControl(t)
	nodes := rig.StartN(t, 12)
	ctx := ctxFor(t)
	for i, n := range nodes {
		info, err := n.Info(ctx, "server")
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("process_id:%d", n.Pid())
		if !strings.Contains(info, want) {
			t.Errorf("node %d (%s): INFO server lacks %q", i, n.Addr(), want)
		}
	}
}

// TestReplicaOfReturnsWhenWritesReplicate: once ReplicaOf returns, a write
// on the primary is acknowledged at once (WaitReplicas), and WaitReplicas
// reports too few replicas as an error.
func TestReplicaOfReturnsWhenWritesReplicate(t *testing.T) {
	rig.RequireControl(t)
	for range 3 {
		nodes := rig.StartN(t, 2)
		primary, replica := nodes[0], nodes[1]
		ctx := ctxFor(t)
		if err := replica.ReplicaOf(ctx, primary.Addr()); err != nil {
			t.Fatal(err)
		}
		if err := primary.WaitReplicas(ctx, 1, 200*time.Millisecond); err != nil {
			t.Fatalf("WaitReplicas right after ReplicaOf = %v; want nil", err)
		}
		if err := primary.WaitReplicas(ctx, 2, 20*time.Millisecond); err == nil {
			t.Fatal("WaitReplicas(2) with one replica = nil; want an error")
		}
	}
}
