//go:build docker

package rig

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
)

// TestDockerProviderSaysWhyNot runs everywhere (CI has no engine): without
// an engine the provider is refused with a reason, never a panic.
func TestDockerProviderSaysWhyNot(t *testing.T) {
	p, err := newDockerProvider()
	if err != nil {
		t.Logf("no Docker here: %v", err)
	}
	switch {
	case err == nil && p == nil:
		t.Fatal("newDockerProvider() = nil, nil; want a provider or an error")
	case err != nil && p != nil:
		t.Fatalf("newDockerProvider() = %v, %v; want one of them", p.name(), err)
	case err != nil && !strings.Contains(strings.ToLower(err.Error()), "docker"):
		t.Errorf("newDockerProvider() error = %q; want it to say Docker", err)
	case err == nil && !strings.HasPrefix(p.name(), "docker ("):
		t.Errorf("provider name = %q; want docker (<image>)", p.name())
	}
	if dockerProvider == nil {
		t.Error("docker.go did not register dockerProvider")
	}
}

// dockerNode starts a node in a container for the test, or skips the test,
// saying why, when no Docker engine answers.
func dockerNode(t *testing.T, opts ...Option) *Node {
	t.Helper()
	testcontainers.SkipIfProviderIsNotHealthy(t)
	p, err := newDockerProvider()
	if err != nil {
		t.Skipf("Docker: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // the first run pulls the image
	defer cancel()
	n, err := p.start(ctx, newConfig(opts), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("container log:\n%s", n.LogTail(30))
		}
		if err := n.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return n
}

func dockerCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestDockerNodeAnswersOnLoopback(t *testing.T) {
	n := dockerNode(t)
	ctx := dockerCtx(t)
	host, port, err := net.SplitHostPort(n.Addr())
	if err != nil || port == "6379" {
		t.Fatalf("Addr() = %q; want host:port, never 6379", n.Addr())
	}
	if p := n.ctl.(*dockerServer).p; p.local && host != "127.0.0.1" {
		t.Errorf("Addr() = %q with a local engine; want 127.0.0.1", n.Addr())
	}
	c := n.Client()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING = %v", err)
	}
	if err := c.Do(ctx, "DEBUG", "SLEEP", "0").Err(); err != nil {
		t.Errorf("DEBUG SLEEP 0 = %v; want OK (labs use it)", err)
	}
	if cfg, err := c.ConfigGet(ctx, "appendonly").Result(); err != nil || cfg["appendonly"] != "no" {
		t.Errorf("CONFIG GET appendonly = %v, %v; want no", cfg, err)
	}
	if n.Pid() == 0 {
		t.Error("Pid() = 0 for a running container; want the engine's pid")
	}
}

func TestDockerKillAndRestartKeepTheAddress(t *testing.T) {
	n := dockerNode(t, WithAOF())
	ctx := dockerCtx(t)
	c := n.Client()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	addr := n.Addr()
	if err := n.Kill(); err != nil {
		t.Fatalf("Kill() = %v", err)
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Error("PING after Kill succeeded; want an error")
	}
	if n.Pid() != 0 {
		t.Errorf("Pid() after Kill = %d; want 0", n.Pid())
	}
	if err := n.Restart(ctx, true); err != nil {
		t.Fatalf("Restart(keepData) = %v", err)
	}
	if n.Addr() != addr {
		t.Errorf("Addr() after Restart = %s; want %s (the port is pinned)", n.Addr(), addr)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Errorf("GET k after Restart(keepData) = %q, %v; want v (AOF, fsync always)", got, err)
	}
	if err := n.Restart(ctx, false); err != nil {
		t.Fatalf("Restart(no data) = %v", err)
	}
	if n.Addr() != addr {
		t.Errorf("Addr() after Restart(no data) = %s; want %s", n.Addr(), addr)
	}
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS k after Restart(no data) = %d, %v; want 0", n, err)
	}
}

func TestDockerPauseFreezesTheServer(t *testing.T) {
	n := dockerNode(t)
	ctx := dockerCtx(t)
	if err := n.Pause(); err != nil {
		t.Fatalf("Pause() = %v", err)
	}
	if err := n.Ping(300 * time.Millisecond); err == nil {
		t.Error("PING to a paused container answered; want a timeout")
	}
	if err := n.Resume(); err != nil {
		t.Fatalf("Resume() = %v", err)
	}
	if err := n.Client().Ping(ctx).Err(); err != nil {
		t.Errorf("PING after Resume = %v", err)
	}
	if err := n.Stop(); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	if err := n.Resume(); err == nil {
		t.Error("Resume() of a stopped container = nil; want an error")
	}
	var ne net.Error
	if err := n.Ping(300 * time.Millisecond); err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Errorf("PING after Stop = %v; want the connection refused", err)
	}
}
