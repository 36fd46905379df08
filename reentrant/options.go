package reentrant

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/locklab/locklab/observe"
)

const (
	// defaultTTL is how long the key lives after each acquire, re-entry,
	// partial release or extend. It bounds how long a crashed owner keeps
	// others out.
	defaultTTL = 10 * time.Second
	// minTTL is the shortest TTL: PEXPIRE counts in whole milliseconds.
	minTTL = time.Millisecond
	// defaultMinDelay and defaultMaxDelay bound the default retry delay of
	// Lock, which doubles from the first to the second.
	defaultMinDelay = 8 * time.Millisecond
	defaultMaxDelay = 256 * time.Millisecond
	// releaseTimeout bounds an Unlock whose context was already cancelled.
	releaseTimeout = 5 * time.Second
)

// DelayFunc returns how long [Mutex.Lock] waits before its next try, given
// the number of tries made so far (1 after the first).
type DelayFunc func(attempt int) time.Duration

// defaultDelay is exponential backoff from defaultMinDelay to
// defaultMaxDelay with "equal jitter": a random wait in [d/2, d].
func defaultDelay(attempt int) time.Duration {
	d := defaultMinDelay << min(max(attempt-1, 0), 16)
	d = min(d, defaultMaxDelay)
	return d/2 + rand.N(d/2+1)
}

// Option configures a [Mutex].
type Option func(*options)

type options struct {
	ttl      time.Duration
	delay    DelayFunc
	tries    int // 0 means until the context ends
	hook     func(ctx context.Context, point string)
	observer observe.Func
	errs     []error
}

// WithTTL sets how long the key lives after each acquire, re-entry and
// partial release: a re-entry refreshes the TTL. If ttl < 1ms, every
// method returns an error wrapping [ErrInvalid]. The default is 10s.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) {
		if ttl < minTTL {
			o.invalid("WithTTL(%v): ttl must be at least %v", ttl, minTTL)
		}
		o.ttl = ttl
	}
}

// WithRetry sets the wait between the tries of [Mutex.Lock]. If f is nil,
// every method returns an error wrapping [ErrInvalid]. The default is
// exponential backoff from 8ms to 256ms with jitter.
func WithRetry(f DelayFunc) Option {
	return func(o *options) {
		if f == nil {
			o.invalid("WithRetry(nil)")
		}
		o.delay = f
	}
}

// WithTries caps the number of tries [Mutex.Lock] makes before it returns
// [ErrNotObtained]. If n < 1, every method returns an error wrapping
// [ErrInvalid]. The default is no cap: Lock tries until its context ends.
func WithTries(n int) Option {
	return func(o *options) {
		if n < 1 {
			o.invalid("WithTries(%d): tries must be at least 1", n)
		}
		o.tries = n
	}
}

// WithHook makes the Mutex call f at each step named by a Hook constant,
// in the calling goroutine. f may block: the step waits, which is how the
// labs park an owner between two commands. A nil f means no hook, the
// default.
func WithHook(f func(ctx context.Context, point string)) Option {
	return func(o *options) { o.hook = f }
}

// WithObserver reports to f what the Mutex does (see package observe),
// counting only outermost holds: Acquired when a Lock or TryLock takes the
// lock (count 0 to 1), with how long the call waited; Released when an
// Unlock frees it (count 1 to 0), with how long it was held; GaveUp when
// Lock returns without the lock, re-entry or not, with the cause; and Lost
// when Unlock or Extend finds that an Owner no longer holds the lock. A
// re-entry (count 1 to 2 and up) and a partial Unlock report nothing, so
// wait and hold times describe the lock as other owners see it.
//
// Hold times are measured from the outermost Lock this Mutex made: if that
// Lock went through another Mutex value (or another process), Released
// reports a Held of 0, and a refusal is not reported as Lost, since this
// Mutex cannot tell a lost lock from an Unlock without a Lock. f is called
// in the goroutine of the method, so it must be fast and safe for
// concurrent use. If f is nil, nothing is reported and the Mutex keeps no
// state. The default is nil.
func WithObserver(f observe.Func) Option {
	return func(o *options) { o.observer = f }
}

func (o *options) invalid(format string, args ...any) {
	o.errs = append(o.errs, fmt.Errorf("reentrant: "+format+": %w", append(args, ErrInvalid)...))
}

func newOptions(opts []Option) (options, error) {
	o := options{ttl: defaultTTL, delay: defaultDelay}
	for _, opt := range opts {
		opt(&o)
	}
	return o, errors.Join(o.errs...)
}
