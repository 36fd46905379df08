// Package lab07 holds the code of lab 07 (failover): the learner's
// exercise, and the mitigation the fixed runs use, a client whose SET waits
// for the replicas.
package lab07

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated is returned, wrapped, by the SET of a
// [ReplicatedClient] when fewer replicas than it asks for acknowledged the
// SET before the timeout. A lock built on that client does not get the
// lock.
var ErrNotReplicated = errors.New("lab07: lock not replicated")

// ReplicatedClient is a Redis client for [correct.New] whose SET counts
// only once enough replicas have it. After each SET that succeeds it sends
// WAIT numreplicas timeout on the same connection, and turns a short count
// into an error wrapping [ErrNotReplicated].
//
// The lock itself is unchanged: correct.Mutex already treats an error after
// its SET as "the key may be set", so it deletes the key if the key still
// holds its token and reports the lock as not obtained. A lock that no
// replica acknowledged is therefore given back before its owner ever
// believes it holds it, and a failover that promotes a replica cannot lose
// it. Lock returns such an error at once, without retrying, as it does for
// any transport error: waiting for a replica is the caller's decision.
//
// WAIT reports on the writes sent over the connection it is sent on, so
// the SET and the WAIT share one connection taken from the pool
// ([redis.Client.Conn]); on another connection WAIT would count acks for
// that connection's writes, not for the SET.
//
// What WAIT does not guarantee is argued in the lab's README: an
// acknowledged write can still be lost.
//
// Make one with [WaitForReplicas]. Every method but SetArgs is the
// embedded client's.
type ReplicatedClient struct {
	*redis.Client
	replicas int           // acks wanted, >= 1
	timeout  time.Duration // how long WAIT may block, > 0
	err      error         // invalid arguments, returned by every SetArgs
}

// WaitForReplicas returns client wrapped so that a SET succeeds only once
// at least replicas replicas acknowledged it within timeout. A replicas
// below 1 or a timeout below 1ms (WAIT 0 would block forever) makes every
// SetArgs fail with an error saying so.
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

// SetArgs sends SET with a's options and, if Redis set the key, WAIT on
// the same connection. The result is the SET's, except that a WAIT that
// failed or counted fewer acks than wanted makes it an error (wrapping
// [ErrNotReplicated] for a short count). A SET that did not set the key
// (NX and the key exists) is returned as it is, without a WAIT.
func (c *ReplicatedClient) SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd {
	if c.err != nil {
		cmd := redis.NewStatusCmd(ctx, "set", key, value)
		cmd.SetErr(c.err)
		return cmd
	}
	conn := c.Client.Conn() // one connection: WAIT asks about the writes sent on it
	defer conn.Close()
	cmd := conn.SetArgs(ctx, key, value, a)
	if !setTheKey(cmd, value, a) {
		return cmd // taken, or a transport error, for the lock to handle
	}
	acked, err := conn.Wait(ctx, c.replicas, c.timeout).Result()
	switch {
	case err != nil:
		cmd.SetErr(fmt.Errorf("lab07: WAIT %d %d after SET %q: %w", c.replicas, c.timeout.Milliseconds(), key, err))
	case acked < int64(c.replicas):
		cmd.SetErr(fmt.Errorf("%w: SET %q acknowledged by %d of %d replicas within %v",
			ErrNotReplicated, key, acked, c.replicas, c.timeout))
	}
	return cmd
}

// setTheKey reports whether a SET with options a, which answered cmd, set
// the key to value: without GET, an OK; with GET (SET NX GET, which
// package correct sends, knows its own key when sent twice), nil (the key
// was absent) or value itself (the first run of this SET set it).
func setTheKey(cmd *redis.StatusCmd, value any, a redis.SetArgs) bool {
	if !a.Get {
		return cmd.Err() == nil
	}
	return errors.Is(cmd.Err(), redis.Nil) || cmd.Err() == nil && cmd.Val() == fmt.Sprint(value)
}
