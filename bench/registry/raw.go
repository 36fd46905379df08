package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/token"
)

// raw is the floor every lock is measured against: the bare go-redis
// commands a lock on one key needs, with no library around them. Acquire
// is SET key token NX PX ttl with a fresh 128-bit token; release is one
// EVALSHA of a compare-and-delete script (EVAL on NOSCRIPT). Nothing else:
// no options, no observer, no hooks, no queue. Refused, it sends the SET
// again after rawRetry, so it can run in the contended cells too, where
// its figures are what bare polling reaches.
//
// raw-5 is the same on five servers: the SETs sent in parallel, the lock
// held when a majority answered OK (after every reply is in), and the
// release sent to all five in parallel. It is the floor of the 5-node
// locks; it checks no validity and keeps no order.
//
// raw+receipt and raw-5+receipt are raw and raw-5 with a release that is
// safe to send twice: the compare-and-delete leaves a receipt (a key of
// its own, for retry.ReceiptTTL), and a run that finds the key not ours
// answers from it. That is what a release must do to answer right when
// go-redis sends it again after a lost reply (see correct/release.lua),
// and what no peer does; the pair of floors shows, in the same round, what
// that costs the machine.
//
// raw-again is raw once more, run in every round like the rest: the A/A
// control. Its ratio to raw is the ratio of two runs of the same code in
// the same round, so its spread over rounds is how far apart this machine
// puts equal locks; a lock whose ratio to another falls inside it has not
// been shown faster or slower (the summary prints it beside the floor).
//
// None of them is a lock to use: the floor tells how far each lock is from
// what the machine allows for its round trips.
func init() {
	gaveUp := func(error) bool { return false }
	register(&Lock{Name: "raw", Order: 130, Nodes: 1, PipelinedInDefault: true, Kind: Floor, Connect: connectRaw(1, rawRelease), GaveUp: gaveUp})
	register(&Lock{Name: "raw-5", Order: 160, Nodes: 5, Kind: Floor, Connect: connectRaw(5, rawRelease), GaveUp: gaveUp})
	register(&Lock{Name: "raw-again", Order: 140, Nodes: 1, Kind: Floor, Connect: connectRaw(1, rawRelease), GaveUp: gaveUp})
	register(&Lock{Name: "raw+receipt", Order: 150, Nodes: 1, PipelinedInDefault: true, Kind: Floor, Connect: connectRaw(1, rawReleaseReceipt), GaveUp: gaveUp})
	register(&Lock{Name: "raw-5+receipt", Order: 170, Nodes: 5, Kind: Floor, Connect: connectRaw(5, rawReleaseReceipt), GaveUp: gaveUp})
}

// rawRetry is how long raw waits before sending a refused SET again: the
// 1ms linear retry redislock runs with in the bench.
const rawRetry = time.Millisecond

// rawRelease deletes the key only if it still holds our token.
var rawRelease = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

// rawReleaseReceipt is rawRelease leaving a receipt, KEYS[2], for ARGV[2]
// ms, and answering from it when the key is not ours: run twice, it
// answers 1 both times.
var rawReleaseReceipt = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then
	redis.call("del", KEYS[1])
	redis.call("set", KEYS[2], "1", "px", ARGV[2])
	return 1
end
return tonumber(redis.call("get", KEYS[2]) or 0)`)

func connectRaw(n int, script *redis.Script) func(e Env) (Contender, error) {
	return func(e Env) (Contender, error) {
		sent := new(atomic.Int64)
		cs, err := e.Clients(fmt.Sprintf("raw-%d", n), n, sent)
		if err != nil {
			return Contender{}, err
		}
		lcs := make([]redis.UniversalClient, n)
		for i, c := range cs {
			lcs[i] = e.Redis(i, c)
		}
		return Contender{
			Locker: func(key string) Locker {
				return &rawLocker{cs: lcs, key: key, base: keyslot.Base(key), ttl: e.TTL, script: script}
			},
			Close: func() error { return closeAll(cs) },
			Sent:  sent,
		}, nil
	}
}

type rawLocker struct {
	cs     []redis.UniversalClient
	key    string
	base   string // keyslot.Base(key), for receipts
	ttl    time.Duration
	script *redis.Script // rawRelease or rawReleaseReceipt
	tok    string
}

func (l *rawLocker) Lock(ctx context.Context) error {
	for {
		tok := token.New()
		ok, err := l.set(ctx, tok)
		if err != nil {
			return err
		}
		if ok {
			l.tok = tok
			return nil
		}
		t := time.NewTimer(rawRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// set sends the SET to every server and reports whether a majority took
// it; a minority is released before it returns.
func (l *rawLocker) set(ctx context.Context, tok string) (bool, error) {
	if len(l.cs) == 1 {
		err := l.cs[0].SetArgs(ctx, l.key, tok, redis.SetArgs{Mode: "NX", TTL: l.ttl}).Err()
		if errors.Is(err, redis.Nil) {
			return false, nil
		}
		return err == nil, err
	}
	oks := l.each(func(c redis.UniversalClient) error {
		return c.SetArgs(ctx, l.key, tok, redis.SetArgs{Mode: "NX", TTL: l.ttl}).Err()
	})
	if oks > len(l.cs)/2 {
		return true, nil
	}
	l.release(context.WithoutCancel(ctx), tok)
	return false, ctx.Err()
}

// each runs fn on every client in parallel and counts the nil errors.
func (l *rawLocker) each(fn func(c redis.UniversalClient) error) int {
	var wg sync.WaitGroup
	var oks atomic.Int64
	for _, c := range l.cs {
		wg.Go(func() {
			if fn(c) == nil {
				oks.Add(1)
			}
		})
	}
	wg.Wait()
	return int(oks.Load())
}

func (l *rawLocker) release(ctx context.Context, tok string) int {
	keys, args := []string{l.key}, []any{tok}
	if l.script == rawReleaseReceipt {
		keys, args = []string{l.key, keyslot.Receipt(l.base, tok)}, []any{tok, retry.ReceiptMS}
	}
	if len(l.cs) == 1 {
		n, err := l.script.Run(ctx, l.cs[0], keys, args...).Int()
		if err != nil || n == 0 {
			return 0
		}
		return 1
	}
	return l.each(func(c redis.UniversalClient) error {
		n, err := l.script.Run(ctx, c, keys, args...).Int()
		if err == nil && n == 0 {
			return redis.Nil
		}
		return err
	})
}

func (l *rawLocker) Unlock(ctx context.Context) error {
	tok := l.tok
	l.tok = ""
	if tok == "" {
		return errors.New("raw: not held")
	}
	if l.release(ctx, tok) <= len(l.cs)/2 {
		return errors.New("raw: lock not held at release")
	}
	return nil
}
