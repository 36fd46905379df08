package pubsub

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Sub is what [Resubscribe] needs from a Notifier to replace one
// subscription: how to make one, where to keep it, and whom to tell.
type Sub struct {
	// Subscribe makes a new, unconfirmed subscription to the Notifier's
	// channel (a go-redis client's Subscribe).
	Subscribe func(ctx context.Context) *redis.PubSub
	// Adopt makes ps the Notifier's current subscription, the one its
	// Close closes, before Resubscribe waits for ps's confirmation: so a
	// Close during that wait (a frozen node answers nothing) ends it at
	// once. It reports false when the Notifier is closed; Resubscribe
	// then closes ps and returns nil.
	Adopt func(ps *redis.PubSub) bool
	// Done is closed when the Notifier is closed.
	Done <-chan struct{}
	// Resubscribed, if not nil, is called once a new subscription is
	// confirmed, before Resubscribe returns it: messages published while
	// the old one was down were lost, so the Notifier has its waiters look
	// for themselves.
	Resubscribed func()
}

// Resubscribe replaces old, a subscription that died, and returns the new
// one once Redis has confirmed it; it is what [Read] calls through its
// resubscribe argument. It closes old, then tries again every
// [ResubscribePause] (a Redis that is down is not dialled in a tight loop):
// each try makes a subscription, has s adopt it, and waits up to
// [PongTimeout] for the confirmation. It returns nil once s.Done is
// closed or s.Adopt reports false; it never gives up otherwise, since a
// Notifier must listen for as long as it is open.
func Resubscribe(old *redis.PubSub, s Sub) *redis.PubSub {
	_ = old.Close()
	pause := time.NewTimer(ResubscribePause)
	defer pause.Stop()
	for {
		select {
		case <-s.Done:
			return nil
		case <-pause.C:
		}
		ps := s.Subscribe(context.Background())
		if !s.Adopt(ps) {
			_ = ps.Close()
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), PongTimeout)
		_, err := ps.Receive(ctx)
		cancel()
		if err == nil {
			if s.Resubscribed != nil {
				s.Resubscribed()
			}
			return ps
		}
		_ = ps.Close()
		pause.Reset(ResubscribePause)
	}
}
