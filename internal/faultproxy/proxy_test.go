package faultproxy_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/rig"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// setup returns a client that reaches a real server through a proxy.
func setup(t *testing.T) (*faultproxy.Proxy, *redis.Client) {
	t.Helper()
	n := rig.Start(t)
	p := faultproxy.Start(t, n.Addr())
	o := rig.ClientOptions(p.Addr())
	o.ReadTimeout = 300 * time.Millisecond
	o.PoolSize = 1
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("PING through proxy = %v; want PONG", err)
	}
	return p, c
}

func pingTime(t *testing.T, c *redis.Client) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	err := c.Ping(context.Background()).Err()
	return time.Since(start), err
}

func TestLatencyAddsBothWays(t *testing.T) {
	p, c := setup(t)
	const d = 40 * time.Millisecond
	p.SetLatency(d)
	took, err := pingTime(t, c)
	if err != nil {
		t.Fatal(err)
	}
	if took < 2*d {
		t.Errorf("PING with %v latency each way took %v; want >= %v", d, took, 2*d)
	}
	p.SetLatency(0)
	if took, _ = pingTime(t, c); took >= 2*d {
		t.Errorf("PING after latency removed took %v; want < %v", took, 2*d)
	}
}

func TestBlackholeTimesOutThenHeals(t *testing.T) {
	p, c := setup(t)
	p.Blackhole()
	_, err := pingTime(t, c)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("PING in blackhole = %v; want a timeout", err)
	}
	p.Heal()
	if _, err := pingTime(t, c); err != nil {
		t.Fatalf("PING after Heal = %v; want PONG", err)
	}
}

func TestBlackholeHoldsBytesUntilHeal(t *testing.T) {
	n := rig.Start(t)
	p := faultproxy.Start(t, n.Addr())
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	p.Blackhole()
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := conn.Read(buf); err == nil {
		t.Fatalf("read %q during blackhole; want nothing", buf[:n])
	}
	p.Heal()
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	k, err := conn.Read(buf)
	if err != nil || string(buf[:k]) != "+PONG\r\n" {
		t.Fatalf("read after Heal = %q, %v; want +PONG", buf[:k], err)
	}
}

func TestResetFailsFastThenHeals(t *testing.T) {
	p, c := setup(t)
	p.Reset()
	took, err := pingTime(t, c)
	if err == nil {
		t.Fatal("PING after Reset succeeded; want a reset/EOF error")
	}
	if took > 200*time.Millisecond {
		t.Errorf("PING after Reset failed after %v; want a fast failure (not a timeout)", took)
	}
	p.Heal()
	// A new connection works at once. (c itself may replay its last dial
	// error for up to a second: go-redis stops dialling once failed dials
	// reach the pool size, until its background probe succeeds.)
	fresh := redis.NewClient(rig.ClientOptions(p.Addr()))
	defer fresh.Close()
	if _, err := pingTime(t, fresh); err != nil {
		t.Fatalf("PING on a new connection after Heal = %v; want PONG", err)
	}
}

func TestCloseRefusesConnections(t *testing.T) {
	p, c := setup(t)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := pingTime(t, c); err == nil {
		t.Fatal("PING after Close succeeded; want an error")
	}
}
