package preflight

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/retry"
)

// Probe is a lock's harmless script run, as a value: its script with the
// keys and arguments that name [ProbeToken], which nobody holds, so the
// script reads the key and changes nothing. A user that may not run it may
// not run the lock's scripts.
type Probe struct {
	Script *redis.Script
	Keys   []string
	Args   []any
}

// Gate is the check a lock on one server asks before each Lock and
// TryLock: a value the lock makes in New and asks ([Gate.Pass]); it calls
// nothing of the lock's. Its methods are safe for concurrent use.
type Gate struct {
	Pkg         string         // prefixes the messages: "watchdog"
	Key         string         // the lock's key, named in the error
	Client      redis.Scripter // the server, and the user, asked
	Eviction    bool           // refuse a server that may evict keys (the lock's WithEvictionCheck)
	NotObtained error          // the lock's ErrNotObtained
	Probe       Probe          // the lock's harmless script run
}

// Pass returns errors.Join(NotObtained, ctx.Err()) if ctx has ended
// (sending nothing), or ends during the check; the error of [Gate.Inspect]
// wrapped as "<pkg>: lock <key>: ..."; or nil when the lock may go ahead.
// The check runs once per [Interval] per server and user.
func (g *Gate) Pass(ctx context.Context) error {
	if err := retry.CtxErr(ctx); err != nil {
		return errors.Join(g.NotObtained, err)
	}
	if err := g.Inspect(ctx); err != nil {
		return retry.Failed(ctx, g.NotObtained, fmt.Errorf("%s: lock %q: %w", g.Pkg, g.Key, err))
	}
	return nil
}

// Inspect is [Check] for the gate's server: nil, an error wrapping
// [ErrEviction] or [ErrNoScripting], or a transport error as it is.
func (g *Gate) Inspect(ctx context.Context) error {
	return Check(ctx, g.Pkg, g.Client, g.Eviction, g.Probe.run(g.Client))
}

// Remembered is [Remembered] for the gate's server.
func (g *Gate) Remembered() (error, bool) {
	return Remembered(g.Client, g.Eviction)
}

// run returns the probe's run on client.
func (p Probe) run(client redis.Scripter) func(context.Context) error {
	return func(ctx context.Context) error {
		return p.Script.Run(ctx, client, p.Keys, p.Args...).Err()
	}
}
