package main

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/locklab/locklab/correct"
)

// correct: SET NX PX with an owner-checked release and the common TTL, in
// the configuration its package doc recommends for contended locks: one
// Notifier per client (a separate process would have one), so waiters
// queue and the holder hands the lock straight to the oldest one.
//
// correct-poll: the same lock waiting by polling with its default jittered
// backoff, to compare the two waiting strategies side by side.
func init() {
	gaveUp := func(err error) bool { return errors.Is(err, correct.ErrNotObtained) }
	register(&impl{name: "correct", nodes: 1, connect: connectCorrect(true), gaveUp: gaveUp})
	register(&impl{name: "correct-poll", nodes: 1, connect: connectCorrect(false), gaveUp: gaveUp})
}

func connectCorrect(notify bool) func(e env) (contender, error) {
	return func(e env) (contender, error) {
		sent := new(atomic.Int64)
		c := e.client(0, sent)
		opts := []correct.Option{correct.WithTTL(e.ttl)}
		closeAll := c.Close
		if notify {
			n, err := correct.NewNotifier(context.Background(), c)
			if err != nil {
				_ = c.Close()
				return contender{}, err
			}
			opts = append(opts, correct.WithNotifier(n))
			closeAll = func() error { return errors.Join(n.Close(), c.Close()) }
		}
		return contender{
			locker: func(key string) locker { return correct.New(c, key, opts...) },
			close:  closeAll,
			sent:   sent,
		}, nil
	}
}
