package preflight

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ErrUnordered is wrapped by the error for an AutoPipeliner that may run a
// caller's commands out of the order it sent them.
var ErrUnordered = errors.New("the AutoPipeliner runs batches unordered (Unordered: true)")

// Bound returns the client a lock should use in place of client: client
// itself, unless it is go-redis's *redis.AutoPipeliner, which it wraps so
// that each command's wait for its reply ends with the command's context.
//
// The AutoPipeliner runs a queued command on its own long-lived context: a
// caller's deadline or cancellation is not honoured once the command is
// queued (go-redis's doc says so), so a Lock given 100ms could wait for the
// batch's read timeouts and retries, seconds. The wrapper sends the lock's
// commands (SET, the scripts, INFO) through the same client's deferred face
// (AsyncAutoPipeline: the same batching engine, whose futures can be waited
// for with a context) and waits for each reply only until ctx ends; then it
// returns ctx's error. The command still runs, as a command whose reply was
// lost does on a plain client; the locks already answer for that (a failed
// acquisition deletes its key if the SET landed, by a release sent after
// it, which the AutoPipeliner runs after it: per key, it keeps the order
// commands were sent in). Where the deferred face cannot be had, each wait
// runs on a goroutine of its own instead, which costs more.
//
// The AutoPipeliner of a *redis.ClusterClient (ClusterClient.AutoPipeline())
// is the same type and is wrapped the same way: its deferred face is the
// ClusterClient's, which routes each command by its key's slot to one
// shard's queue, so per key the order holds there too, and a wait ends
// with its context (internal/contract's TestCluster: without the wrapper,
// a Lock given 100ms with the link to the key's primary cut returned after
// 75s). INFO, which has no key, goes to one node of the cluster, the one
// go-redis picks: the eviction check sees that node only.
//
// Bound returns an error wrapping [ErrUnordered] for an AutoPipeliner (or
// a deferred face) configured with Unordered: true. There a release sent
// after a SET may run before it, so a Lock that gave up could leave its key
// behind for a whole TTL, unseen; a lock must refuse it. C is the lock
// package's client interface; the wrapper has every method of the
// AutoPipeliner.
func Bound[C any](client C) (C, error) {
	ap, ok := any(client).(*redis.AutoPipeliner)
	if !ok || ap == nil {
		return client, nil
	}
	st := stateOf(ap)
	if st.err != nil {
		return client, st.err
	}
	b, ok := any(st.bound).(C)
	if !ok {
		return client, nil // cannot happen: the wrapper embeds the AutoPipeliner
	}
	return b, nil
}

// Ordered returns the error [Bound] would for client (one wrapping
// [ErrUnordered]), or nil, and wraps nothing: for a lock that bounds its
// waits itself and lets each call run to its real end (package redlock's
// fan-out, which releases a SET that lands late when its reply comes).
func Ordered(client any) error {
	if ap, ok := client.(*redis.AutoPipeliner); ok && ap != nil {
		return stateOf(ap).err
	}
	return nil
}

// pipelinerState is what Bound found out about one AutoPipeliner, made once
// (the wrappers of one AutoPipeliner share it, and so are equal: the
// preflight remembers one result for all of them).
type pipelinerState struct {
	err   error                // why a lock must refuse it, or nil
	bound *boundedPipeliner    // the one wrapper of it: a pointer, so handing it out allocates nothing
	async *redis.AutoPipeliner // the client's deferred face; nil: wait on a goroutine
	pipes sync.Pool            // of redis.Pipeliner: builds commands exactly as go-redis's typed methods do
}

var states sync.Map // *redis.AutoPipeliner -> *pipelinerState

func stateOf(ap *redis.AutoPipeliner) *pipelinerState {
	if st, ok := states.Load(ap); ok {
		return st.(*pipelinerState)
	}
	st := &pipelinerState{}
	st.bound = &boundedPipeliner{ap, st}
	unordered := fmt.Errorf("%w: a release may overtake the SET it must follow; use the AutoPipeliner's default, ordered options", ErrUnordered)
	switch async, err := ap.AsyncAutoPipeline(); {
	case ap.Config().Unordered:
		st.err = unordered
	case err == nil && async != nil && async.Config().Unordered:
		st.err = unordered
	case err == nil && async != nil:
		st.async = async
		st.pipes.New = func() any { return async.Pipeline() }
	}
	actual, _ := states.LoadOrStore(ap, st)
	return actual.(*pipelinerState)
}

// boundedPipeliner is an AutoPipeliner whose commands a lock sends (SET,
// the scripts, INFO) honour their context's end (see [Bound]). There is one
// per AutoPipeliner (pipelinerState.bound).
type boundedPipeliner struct {
	*redis.AutoPipeliner
	st *pipelinerState
}

// record returns the command build makes on a pipeline that only records
// it (nothing is sent).
func record[T redis.Cmder](st *pipelinerState, build func(redis.Pipeliner) T) T {
	p := st.pipes.Get().(redis.Pipeliner)
	cmd := build(p)
	p.Discard()
	st.pipes.Put(p)
	return cmd
}

// send sends the command build makes, through the deferred face, and waits
// for its reply until ctx ends; without a deferred face it runs call on a
// goroutine (see bounded).
func send[T redis.Cmder](ctx context.Context, b *boundedPipeliner, build func(redis.Pipeliner) T, call func() T, mk func(context.Context, ...any) T) T {
	if b.st.async == nil {
		return bounded(ctx, call, mk)
	}
	if err := ctx.Err(); err != nil {
		return failed(ctx, mk, err)
	}
	cmd := record(b.st, build)
	f := b.st.async.Submit(ctx, cmd)
	if ctx.Done() == nil {
		_ = f.Wait()
		return cmd
	}
	if err := f.WaitContext(ctx); err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) && ctx.Err() != nil {
		return failed(ctx, mk, ctx.Err())
	}
	return cmd
}

func (b *boundedPipeliner) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return send(ctx, b,
		func(p redis.Pipeliner) *redis.Cmd { return p.Eval(ctx, script, keys, args...) },
		func() *redis.Cmd { return b.AutoPipeliner.Eval(ctx, script, keys, args...) }, redis.NewCmd)
}

func (b *boundedPipeliner) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return send(ctx, b,
		func(p redis.Pipeliner) *redis.Cmd { return p.EvalSha(ctx, sha1, keys, args...) },
		func() *redis.Cmd { return b.AutoPipeliner.EvalSha(ctx, sha1, keys, args...) }, redis.NewCmd)
}

func (b *boundedPipeliner) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return send(ctx, b,
		func(p redis.Pipeliner) *redis.Cmd { return p.EvalRO(ctx, script, keys, args...) },
		func() *redis.Cmd { return b.AutoPipeliner.EvalRO(ctx, script, keys, args...) }, redis.NewCmd)
}

func (b *boundedPipeliner) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return send(ctx, b,
		func(p redis.Pipeliner) *redis.Cmd { return p.EvalShaRO(ctx, sha1, keys, args...) },
		func() *redis.Cmd { return b.AutoPipeliner.EvalShaRO(ctx, sha1, keys, args...) }, redis.NewCmd)
}

func (b *boundedPipeliner) Info(ctx context.Context, section ...string) *redis.StringCmd {
	return send(ctx, b,
		func(p redis.Pipeliner) *redis.StringCmd { return p.Info(ctx, section...) },
		func() *redis.StringCmd { return b.AutoPipeliner.Info(ctx, section...) }, redis.NewStringCmd)
}

// bounded runs call and returns its command once the reply is in, or, if
// ctx ends first, a command made by mk holding an error that wraps
// ctx.Err() (call's command is then left to its goroutine, which ends when
// the AutoPipeliner answers it). A ctx that never ends costs nothing more
// than the call.
func bounded[T redis.Cmder](ctx context.Context, call func() T, mk func(context.Context, ...any) T) T {
	if ctx.Done() == nil {
		return call()
	}
	if err := ctx.Err(); err != nil {
		return failed(ctx, mk, err)
	}
	done := make(chan T, 1)
	go func() {
		c := call()
		_ = c.Err() // on the deferred face, waits for the batch
		done <- c
	}()
	select {
	case c := <-done:
		return c
	case <-ctx.Done():
		return failed(ctx, mk, ctx.Err())
	}
}

func failed[T redis.Cmder](ctx context.Context, mk func(context.Context, ...any) T, err error) T {
	c := mk(ctx)
	c.SetErr(fmt.Errorf("no reply from the AutoPipeliner before the context ended (the command may still run): %w", err))
	return c
}
