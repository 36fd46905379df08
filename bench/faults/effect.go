package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/locklab/locklab/bench/judge"
	"github.com/locklab/locklab/internal/rig"
	"github.com/redis/go-redis/v9"
)

// Did a release reported failed take effect? The judge counts it on the
// effect, not on the error's text: for a lock on Redis whose Locker tells
// its owner token (registry.Tokens), the actor reads the lock's servers
// directly (not through the run's proxies) right before its Unlock, where
// the token is, and, when the Unlock returns an error, right after: the
// token gone from every server is a release that took effect (the key is
// deleted, or holds another holder's token). A lock that tells no token
// as a string (fencing's number), or a lock on another system, is not
// read: its failed releases count as reported failed, with no effect
// known.

// effectTimeout bounds one read of the lock's servers.
const effectTimeout = 2 * time.Second

// probeClients connects to the lock's servers for the reads, one plain
// client each (no retries).
func probeClients(addrs []string) []*redis.Client {
	var out []*redis.Client
	for _, a := range addrs {
		out = append(out, redis.NewClient(rig.ClientOptions(a)))
	}
	return out
}

// holding returns, per server, the keys whose name contains key and whose
// value holds tok (a string's value, a hash's field or value), as
// "server/key"; ok false when a server could not be read.
func holding(ctx context.Context, cs []*redis.Client, key, tok string) (map[string]bool, bool) {
	ctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	out := map[string]bool{}
	match := "*" + globEscape(key) + "*"
	for i, c := range cs {
		var cursor uint64
		for range 10_000 { // bounded: the servers hold the scoreboard's keys only
			keys, next, err := c.Scan(ctx, cursor, match, 1000).Result()
			if err != nil {
				return nil, false
			}
			for _, k := range keys {
				has, err := keyHolds(ctx, c, k, tok)
				if err != nil {
					return nil, false
				}
				if has {
					out[fmt.Sprintf("%d/%s", i, k)] = true
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return out, true
}

// keyHolds reports whether key's value holds tok: a string containing it,
// or a hash with a field or value containing it. A key gone meanwhile, or
// of another type, holds nothing.
func keyHolds(ctx context.Context, c *redis.Client, key, tok string) (bool, error) {
	typ, err := c.Type(ctx, key).Result()
	if err != nil {
		return false, err
	}
	switch typ {
	case "string":
		v, err := c.Get(ctx, key).Result()
		if err == redis.Nil {
			return false, nil
		}
		return strings.Contains(v, tok), err
	case "hash":
		m, err := c.HGetAll(ctx, key).Result()
		if err != nil {
			return false, err
		}
		for f, v := range m {
			if strings.Contains(f, tok) || strings.Contains(v, tok) {
				return true, nil
			}
		}
	}
	return false, nil
}

// globEscape escapes the glob characters of SCAN's MATCH.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(s)
}

// releaseEffect is the note an actor records after an Unlock that
// returned an error, from the reads before (where the token was) and
// after; "" when either read failed.
func releaseEffect(before, after map[string]bool, servers int) string {
	switch {
	case before == nil || after == nil:
		return ""
	case len(before) == 0:
		return judge.LostBeforePrefix + " its token was on no server before the Unlock: the lock was already lost, and the error says so"
	case len(after) == 0:
		return judge.TookEffectPrefix + fmt.Sprintf(" its token, on %d key(s) before the Unlock, is on none of the lock's %d server(s) right after: the lock is released", len(before), servers)
	}
	return judge.NoEffectPrefix + fmt.Sprintf(" its token is still on %d key(s) of the lock's %d server(s) (%d before the Unlock): the key stays until its lease ends", len(after), servers, len(before))
}
