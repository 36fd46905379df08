// Package lab07 holds the code of lab 07 (failover): the learner's
// exercise, and the mitigation the fixed runs use, a client whose take of
// the lock waits for the replicas.
package lab07

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/take"
)

// ErrNotReplicated is returned, wrapped, by the SET of a
// [ReplicatedClient] when fewer replicas than it asks for acknowledged the
// SET before the timeout. A lock built on that client does not get the
// lock.
var ErrNotReplicated = errors.New("lab07: lock not replicated")

// ReplicatedClient is a Redis client for [correct.New] whose take of the
// lock counts only once enough replicas have it. correct.Mutex takes its
// key with one script (take.lua: SET key token NX PX ttl, refusing a token
// already released). After each run of that script that took the key, the
// client sends WAIT numreplicas timeout on the same connection, and turns
// a short count into an error wrapping [ErrNotReplicated]. Every other
// command passes through unchanged.
//
// The lock itself is unchanged: correct.Mutex already treats an error
// after its take as "the key may be set", so it releases the key if it
// still holds its token and reports the lock as not obtained. A lock that
// no replica acknowledged is therefore given back before its owner ever
// believes it holds it, and a failover that promotes a replica cannot lose
// it. Lock returns such an error at once, without retrying, as it does for
// any transport error: waiting for a replica is the caller's decision.
//
// WAIT reports on the writes sent over the connection it is sent on, so
// the take and the WAIT share one connection taken from the pool
// ([redis.Client.Conn]); on another connection WAIT would count acks for
// that connection's writes, not for the take.
//
// What WAIT does not guarantee is argued in the lab's README: an
// acknowledged write can still be lost.
//
// Make one with [WaitForReplicas]. Every method but EvalSha and Eval (for
// the take) is the embedded client's.
type ReplicatedClient struct {
	*redis.Client
	replicas int           // acks wanted, >= 1
	timeout  time.Duration // how long WAIT may block, > 0
	err      error         // invalid arguments, returned by every take
}

// WaitForReplicas returns client wrapped so that a take of the lock
// succeeds only once at least replicas replicas acknowledged it within
// timeout. A replicas below 1 or a timeout below 1ms (WAIT 0 would block
// forever) makes every take fail with an error saying so.
func WaitForReplicas(client *redis.Client, replicas int, timeout time.Duration) *ReplicatedClient {
	c := &ReplicatedClient{Client: client, replicas: replicas, timeout: timeout}
	switch {
	case client == nil:
		c.err = errors.New("lab07: WaitForReplicas: nil client")
	case replicas < 1:
		c.err = fmt.Errorf("lab07: WaitForReplicas: replicas = %d; want at least 1", replicas)
	case timeout < time.Millisecond:
		c.err = fmt.Errorf("lab07: WaitForReplicas: timeout = %v; want at least 1ms (WAIT 0 blocks forever)", timeout)
	}
	return c
}

// EvalSha runs a script by its SHA-1, as go-redis's Script.Run does first;
// the lock's take is followed by WAIT (see [ReplicatedClient]).
func (c *ReplicatedClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if sha != take.Script.Hash() {
		return c.Client.EvalSha(ctx, sha, keys, args...)
	}
	return c.replicated(ctx, keys, func(conn *redis.Conn) *redis.Cmd { return conn.EvalSha(ctx, sha, keys, args...) })
}

// Eval runs a script by its source, as Script.Run does after NOSCRIPT; the
// lock's take is followed by WAIT (see [ReplicatedClient]).
func (c *ReplicatedClient) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	if src != take.Src {
		return c.Client.Eval(ctx, src, keys, args...)
	}
	return c.replicated(ctx, keys, func(conn *redis.Conn) *redis.Cmd { return conn.Eval(ctx, src, keys, args...) })
}

// replicated runs the take on one connection and, if it took the key (or
// found it taken by its own first run), WAIT on the same connection. The
// result is the take's, except that a WAIT that failed or counted fewer
// acks than wanted makes it an error (wrapping [ErrNotReplicated] for a
// short count). A take that did not take the key is returned as it is,
// without a WAIT.
func (c *ReplicatedClient) replicated(ctx context.Context, keys []string, run func(*redis.Conn) *redis.Cmd) *redis.Cmd {
	if c.err != nil {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(c.err)
		return cmd
	}
	conn := c.Client.Conn() // one connection: WAIT asks about the writes sent on it
	defer conn.Close()
	cmd := run(conn)
	if code, err := cmd.Int64(); err != nil || !take.Held(code) {
		return cmd // taken by another, released, NOSCRIPT or a transport error: for the lock to handle
	}
	key := ""
	if len(keys) > 0 {
		key = keys[0]
	}
	acked, err := conn.Wait(ctx, c.replicas, c.timeout).Result()
	switch {
	case err != nil:
		cmd.SetErr(fmt.Errorf("lab07: WAIT %d %d after the take of %q: %w", c.replicas, c.timeout.Milliseconds(), key, err))
	case acked < int64(c.replicas):
		cmd.SetErr(fmt.Errorf("%w: the take of %q acknowledged by %d of %d replicas within %v",
			ErrNotReplicated, key, acked, c.replicas, c.timeout))
	}
	return cmd
}
