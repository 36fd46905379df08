package faultproxy_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/rig"
)

// through returns a server, a proxy in front of it, and a direct client to
// the server for looking at what really happened there.
func through(t *testing.T) (*faultproxy.Proxy, *redis.Client) {
	t.Helper()
	n := rig.Start(t)
	return faultproxy.Start(t, n.Addr()), n.Client()
}

// userClient is go-redis on its default options, as users run it: a
// command whose reply is lost is sent again, up to 3 times.
func userClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(rig.UserOptions(addr))
	t.Cleanup(func() { c.Close() })
	return c
}

// strictClient never retries and gives up after timeout.
func strictClient(t *testing.T, addr string, timeout time.Duration) *redis.Client {
	t.Helper()
	o := rig.ClientOptions(addr)
	o.ReadTimeout = timeout
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestDropReplyRunsTheCommandAndLosesItsReply(t *testing.T) {
	p, direct := through(t)
	ctx := t.Context()
	lost := p.DropReply(faultproxy.Match{Command: "INCR", Key: "n"}, 1)

	// Without retries the caller sees the lost reply as an error...
	strict := strictClient(t, p.Addr(), 2*time.Second)
	if err := strict.Incr(ctx, "n").Err(); err == nil {
		t.Fatal("INCR with its reply dropped succeeded; want an error (EOF)")
	}
	// ...although the server ran it.
	if got := direct.Get(ctx, "n").Val(); got != "1" {
		t.Fatalf("n after one INCR whose reply was lost = %q; want 1", got)
	}
	if got := lost.Hits(); got != 1 {
		t.Errorf("Hits() = %d; want 1", got)
	}
	// The rule was for one command: the next reply arrives.
	if got, err := strict.Incr(ctx, "n").Result(); err != nil || got != 2 {
		t.Errorf("INCR after the rule was used up = %d, %v; want 2, nil", got, err)
	}
}

func TestDropReplyMakesGoRedisSendItAgain(t *testing.T) {
	p, direct := through(t)
	ctx := t.Context()
	p.DropReply(faultproxy.Match{Command: "INCR"}, 1)
	got, err := userClient(t, p.Addr()).Incr(ctx, "n").Result()
	if err != nil {
		t.Fatalf("INCR on default options = %v; want it retried to success", err)
	}
	// The retry ran INCR a second time: not idempotent.
	if got != 2 || direct.Get(ctx, "n").Val() != "2" {
		t.Errorf("INCR once, reply lost, retried: returned %d, server has %s; want 2 and 2", got, direct.Get(ctx, "n").Val())
	}
}

func TestDropReplyMatchesScriptsByHash(t *testing.T) {
	p, direct := through(t)
	ctx := t.Context()
	incr := redis.NewScript(`return redis.call("INCR", KEYS[1])`)
	get := redis.NewScript(`return redis.call("GET", KEYS[1])`)
	if err := incr.Load(ctx, direct).Err(); err != nil {
		t.Fatal(err)
	}
	lost := p.DropReply(faultproxy.Match{Script: incr.Hash()}, 1)
	c := userClient(t, p.Addr())
	if got, err := get.Run(ctx, c, []string{"n"}).Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("another script = %v, %v; want its reply (nil): only the matching script loses a reply", got, err)
	}
	// EVALSHA ran, its reply was lost, go-redis sent it again: INCR twice.
	if got, err := incr.Run(ctx, c, []string{"n"}).Int(); err != nil || got != 2 {
		t.Errorf("script whose reply was lost once = %d, %v; want 2 (it ran twice)", got, err)
	}
	if lost.Hits() != 1 {
		t.Errorf("Hits() = %d; want 1", lost.Hits())
	}
}

func TestHoldDeliversAfterTheClientGaveUp(t *testing.T) {
	p, direct := through(t)
	ctx := t.Context()
	held := p.Hold(faultproxy.Match{Command: "SET", Key: "k"}, 1)
	c := strictClient(t, p.Addr(), 100*time.Millisecond)

	err := c.Set(ctx, "k", "late", 0).Err()
	var timeout interface{ Timeout() bool }
	if !errors.As(err, &timeout) || !timeout.Timeout() {
		t.Fatalf("SET while held = %v; want a timeout", err)
	}
	if got := direct.Exists(ctx, "k").Val(); got != 0 {
		t.Fatalf("k exists while its SET is held (EXISTS = %d); want 0", got)
	}
	held.Release()
	waitFor(t, func() bool { return direct.Get(ctx, "k").Val() == "late" }, "the held SET to land after Release")
}

func TestDeliverLate(t *testing.T) {
	p, direct := through(t)
	ctx := t.Context()
	p.DeliverLate(faultproxy.Match{Command: "SET"}, 1, 200*time.Millisecond)
	c := strictClient(t, p.Addr(), 50*time.Millisecond)
	start := time.Now()
	if err := c.Set(ctx, "k", "late", 0).Err(); err == nil {
		t.Fatal("SET delivered late succeeded; want a timeout")
	}
	waitFor(t, func() bool { return direct.Get(ctx, "k").Val() == "late" }, "the late SET to land")
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("late SET landed after %v; want >= 200ms", took)
	}
}

func TestHoldKeepsLaterCommandsBehindIt(t *testing.T) {
	p, direct := through(t)
	ctx := t.Context()
	held := p.Hold(faultproxy.Match{Command: "SET", Key: "a"}, 1)
	conn := strictClient(t, p.Addr(), time.Second).Conn()
	defer conn.Close()
	// One connection, two commands pipelined: the second waits behind the first.
	_, _ = conn.Pipelined(ctx, func(pl redis.Pipeliner) error {
		pl.Set(ctx, "a", "1", 0)
		pl.Set(ctx, "b", "2", 0)
		return nil
	})
	if direct.Exists(ctx, "a", "b").Val() != 0 {
		t.Fatal("a command behind a held one reached the server")
	}
	held.Release()
	waitFor(t, func() bool { return direct.Exists(ctx, "a", "b").Val() == 2 }, "both SETs to land in order")
}

func TestStallFreezesAnOpenSubscription(t *testing.T) {
	p, direct := through(t)
	ctx := t.Context()
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rd := bufio.NewReader(conn)
	if _, err := conn.Write([]byte("SUBSCRIBE ch\r\n")); err != nil {
		t.Fatal(err)
	}
	if got := readFrame(t, rd, conn, time.Second); !strings.Contains(got, "subscribe") {
		t.Fatalf("SUBSCRIBE answered %q; want the confirmation", got)
	}
	plain := strictClient(t, p.Addr(), time.Second)
	frozen := p.Stall(faultproxy.Match{Command: "SUBSCRIBE"})
	if frozen.Hits() != 1 {
		t.Fatalf("Stall froze %d connections; want the 1 subscribed one", frozen.Hits())
	}
	// The server still counts the subscriber: the connection is open.
	if n := direct.Publish(ctx, "ch", "m1").Val(); n != 1 {
		t.Fatalf("PUBLISH = %d receivers; want 1 (the server still sees the subscriber)", n)
	}
	if got := readFrame(t, rd, conn, 150*time.Millisecond); got != "" {
		t.Fatalf("read %q through a stalled connection; want nothing", got)
	}
	// Other connections are not stalled.
	if err := plain.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING on another connection = %v; want PONG", err)
	}
	frozen.Release()
	if got := readFrame(t, rd, conn, 2*time.Second); !strings.Contains(got, "m1") {
		t.Fatalf("after Release read %q; want the message m1", got)
	}
}

// readFrame reads what arrives within d (at least one line, then whatever
// else is buffered), or "" when nothing does.
func readFrame(t *testing.T, rd *bufio.Reader, conn net.Conn, d time.Duration) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(d))
	var out strings.Builder
	for {
		line, err := rd.ReadString('\n')
		out.WriteString(line)
		if err != nil || rd.Buffered() == 0 && out.Len() > 0 && strings.Count(out.String(), "\n") >= 7 {
			break
		}
		if rd.Buffered() == 0 {
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		}
	}
	return out.String()
}

func TestCountAndRemove(t *testing.T) {
	p, _ := through(t)
	ctx := t.Context()
	sets := p.Count(faultproxy.Match{Command: "set"})
	lost := p.DropReply(faultproxy.Match{Command: "SET"}, 0)
	c := strictClient(t, p.Addr(), time.Second)
	if err := c.Set(ctx, "k", "v", 0).Err(); err == nil {
		t.Fatal("SET with replies dropped succeeded")
	}
	lost.Remove()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET after Remove = %v", err)
	}
	if err := sets.Wait(ctx, 2); err != nil || sets.Hits() != 2 {
		t.Errorf("Count saw %d SETs (%v); want 2", sets.Hits(), err)
	}
}

func TestAfterAndEvery(t *testing.T) {
	p, direct := through(t)
	ctx := t.Context()
	// Lose the reply of the third command, leaving the handshake alone.
	third := p.DropReply(faultproxy.Match{}, 1).After(2)
	c := strictClient(t, p.Addr(), time.Second)
	var errs []error
	for i := range 4 {
		errs = append(errs, c.Set(ctx, fmt.Sprint("k", i), "v", 0).Err())
	}
	for i, err := range errs {
		if (err != nil) != (i == 2) {
			t.Errorf("SET %d = %v; want only the third to fail", i, err)
		}
	}
	if n := direct.Exists(ctx, "k0", "k1", "k2", "k3").Val(); n != 4 || third.Hits() != 1 {
		t.Errorf("%d keys set, %d hits; want 4 (the lost reply's SET ran too) and 1", n, third.Hits())
	}
	third.Remove()

	everyOther := p.DropReply(faultproxy.Match{Command: "INCR"}, 2).Every(2)
	failed := 0
	for range 6 {
		if c.Incr(ctx, "n").Err() != nil {
			failed++
		}
	}
	if failed != 2 || everyOther.Hits() != 2 || direct.Get(ctx, "n").Val() != "6" {
		t.Errorf("Every(2) with 2 uses: %d INCRs failed, %d hits, n=%s; want 2, 2, 6", failed, everyOther.Hits(), direct.Get(ctx, "n").Val())
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
