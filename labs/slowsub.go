package labs

import (
	"bytes"
	"context"
	"net"
	"sync"

	"github.com/redis/go-redis/v9"
)

// SlowSubscribe makes a client's SUBSCRIBE reach Redis only when the
// client first reads the connection it sent it on: a slow link, modeled in
// the client's own socket (the bytes wait in it; nothing else is touched).
// A client that waits for the subscription's confirmation (reads) gets it
// at once; one that goes on without it (a TryLock right after Subscribe)
// is not subscribed yet, and a release published meanwhile goes to nobody.
// It is for a client option, and shows on the timeline as a fault.
func SlowSubscribe() ClientOption { return func(e *Env) { e.SlowSubscribe = true } }

// slowSubscribeHook is the go-redis hook of a client with SlowSubscribe.
type slowSubscribeHook struct{}

func (slowSubscribeHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &slowSubConn{Conn: c}, nil
	}
}

func (slowSubscribeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (slowSubscribeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// slowSubConn holds the first write that carries a SUBSCRIBE, and what is
// written after it, until the first Read.
type slowSubConn struct {
	net.Conn
	mu   sync.Mutex
	held []byte // nil: nothing held
	done bool   // the first SUBSCRIBE went out: hold nothing more
}

var subscribeCmd = []byte("subscribe")

func (c *slowSubConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done && (c.held != nil || bytes.Contains(bytes.ToLower(p), subscribeCmd)) {
		c.held = append(c.held, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *slowSubConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if c.held != nil {
		held := c.held
		c.held, c.done = nil, true
		if _, err := c.Conn.Write(held); err != nil {
			c.mu.Unlock()
			return 0, err
		}
	}
	c.mu.Unlock()
	return c.Conn.Read(p)
}
