package preflight

import (
	"context"
	"errors"
	"fmt"

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
// batch's read timeouts and retries, seconds. The wrapper waits for the
// reply only until ctx ends and then returns ctx's error. The command still
// runs, as a command whose reply was lost does on a plain client; the locks
// already answer for that (a failed acquisition deletes its key if the SET
// landed, by a release sent after it, which the AutoPipeliner runs after it:
// per key, it keeps the order commands were sent in).
//
// Bound returns an error wrapping [ErrUnordered] for an AutoPipeliner
// configured with Unordered: true. There a release sent after a SET may
// run before it, so a Lock that gave up could leave its key behind for a
// whole TTL, unseen; a lock must refuse it. C is the lock package's client
// interface; the wrapper has every method of the AutoPipeliner.
func Bound[C any](client C) (C, error) {
	ap, ok := any(client).(*redis.AutoPipeliner)
	if !ok || ap == nil {
		return client, nil
	}
	if ap.Config().Unordered {
		return client, fmt.Errorf("%w: a release may overtake the SET it must follow; use the AutoPipeliner's default, ordered options", ErrUnordered)
	}
	b, ok := any(boundedPipeliner{ap}).(C)
	if !ok {
		return client, nil // cannot happen: the wrapper embeds the AutoPipeliner
	}
	return b, nil
}

// boundedPipeliner is an AutoPipeliner whose commands a lock sends (SET,
// the scripts, INFO) honour their context's end (see [Bound]). It is a
// comparable value: two wrappers of one AutoPipeliner are equal, so the
// preflight remembers one result for both.
type boundedPipeliner struct {
	*redis.AutoPipeliner
}

func (b boundedPipeliner) SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd {
	return bounded(ctx, func() *redis.StatusCmd { return b.AutoPipeliner.SetArgs(ctx, key, value, a) }, redis.NewStatusCmd)
}

func (b boundedPipeliner) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return bounded(ctx, func() *redis.Cmd { return b.AutoPipeliner.Eval(ctx, script, keys, args...) }, redis.NewCmd)
}

func (b boundedPipeliner) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return bounded(ctx, func() *redis.Cmd { return b.AutoPipeliner.EvalSha(ctx, sha1, keys, args...) }, redis.NewCmd)
}

func (b boundedPipeliner) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return bounded(ctx, func() *redis.Cmd { return b.AutoPipeliner.EvalRO(ctx, script, keys, args...) }, redis.NewCmd)
}

func (b boundedPipeliner) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return bounded(ctx, func() *redis.Cmd { return b.AutoPipeliner.EvalShaRO(ctx, sha1, keys, args...) }, redis.NewCmd)
}

func (b boundedPipeliner) Info(ctx context.Context, section ...string) *redis.StringCmd {
	return bounded(ctx, func() *redis.StringCmd { return b.AutoPipeliner.Info(ctx, section...) }, redis.NewStringCmd)
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
