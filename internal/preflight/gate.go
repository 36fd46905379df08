package preflight

import (
	"context"
	"errors"
	"fmt"
	"time"

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
// TryLock: a value the lock makes in New and asks ([Gate.Pass]), or makes
// for each call ([Gate.PassRemembered], package correct); it calls nothing
// of the lock's. Its methods are safe for concurrent use.
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
	return g.refused(ctx, g.Inspect(ctx))
}

// PassAt is [Gate.Pass] for a caller that has just read the clock, at
// now: it asks the server only when no result is remembered at now, and
// reports whether it did (asked). A lock whose gate asked nothing may count
// its first attempt's lease from now: nothing was sent or waited for since.
// After the first pass on a server it costs a lookup: no clock read, no
// allocation.
func (g *Gate) PassAt(ctx context.Context, now time.Time) (asked bool, err error) {
	if done, err := g.PassRemembered(ctx, now); done {
		return false, err
	}
	return true, g.Pass(ctx)
}

// PassRemembered is the part of [Gate.PassAt] that sends nothing: it
// reports done with Pass's error (nil included) when ctx has ended or a
// result is remembered at now, and done=false when only Pass can tell.
// It uses neither Probe nor the clock: a lock may make its Gate on the
// stack for it and fill in the Probe only when Pass must run.
func (g *Gate) PassRemembered(ctx context.Context, now time.Time) (done bool, err error) {
	if err := retry.CtxErr(ctx); err != nil {
		return true, errors.Join(g.NotObtained, err)
	}
	if err, ok := g.rememberedAt(now); ok {
		return true, g.refused(ctx, err)
	}
	return false, nil
}

// refused wraps err, the check's error, as Pass returns it; nil stays nil.
func (g *Gate) refused(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	return retry.Failed(ctx, g.NotObtained, fmt.Errorf("%s: lock %q: %w", g.Pkg, g.Key, err))
}

// Inspect is [Check] for the gate's server: nil, an error wrapping
// [ErrEviction] or [ErrNoScripting], or a transport error as it is.
func (g *Gate) Inspect(ctx context.Context) error {
	if err, ok := g.Remembered(); ok {
		return err // the probe's run is made only when it may run
	}
	return Check(ctx, g.Pkg, g.Client, g.Eviction, g.Probe.run(g.Client))
}

// Remembered is [Remembered] for the gate's server.
func (g *Gate) Remembered() (error, bool) {
	return g.rememberedAt(time.Now())
}

func (g *Gate) rememberedAt(now time.Time) (error, bool) {
	id, comparable := identity(g.Client)
	if !comparable {
		return nil, false
	}
	return remembered(id, g.Eviction, now)
}

// run returns the probe's run on client.
func (p Probe) run(client redis.Scripter) func(context.Context) error {
	return func(ctx context.Context) error {
		return p.Script.Run(ctx, client, p.Keys, p.Args...).Err()
	}
}
