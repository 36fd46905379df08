// Package pubsub keeps a Notifier's Pub/Sub subscription alive: the one
// read loop ([Read]) and the one resubscribe loop ([Resubscribe]) that
// package correct's and package redlock's Notifiers run on each
// subscription, with the same ping, the same dead-connection rule and the
// same pause between attempts to subscribe again.
package pubsub

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// PingEvery is how long a subscription may stay silent before it is
	// pinged.
	PingEvery = time.Second
	// PongTimeout is how long [Read] waits for anything after a ping
	// before it takes the connection for dead (half-open: the peer gone
	// with no FIN, which TCP keepalive would notice only after about 45s)
	// and has it replaced; it also bounds the wait for the confirmation of
	// a new subscription.
	PongTimeout = 2 * time.Second
	// ResubscribePause is how long a Notifier waits between two attempts
	// to subscribe, so that a Redis that is down is not dialled in a tight
	// loop.
	ResubscribePause = 50 * time.Millisecond
)

// Read reads ps until closed reports true, passing the payload of each
// message to route. A subscription silent for [PingEvery] is pinged; when
// the ping fails, nothing answers it within [PongTimeout], or the read
// fails, Read calls resubscribe with the dead subscription and reads the
// one it returns; nil (the Notifier was closed meanwhile) ends Read.
func Read(ps *redis.PubSub, closed func() bool, route func(payload string), resubscribe func(old *redis.PubSub) *redis.PubSub) {
	var pinged time.Time // when the unanswered ping was sent; zero if none
	for {
		msg, err := ps.ReceiveTimeout(context.Background(), PingEvery)
		if closed() {
			return
		}
		switch {
		case err == nil:
			pinged = time.Time{}
			if m, ok := msg.(*redis.Message); ok {
				route(m.Payload)
			}
			continue
		case isTimeout(err) && pinged.IsZero():
			pinged = time.Now()
			if ps.Ping(context.Background()) == nil {
				continue
			}
		case isTimeout(err) && time.Since(pinged) < PongTimeout:
			continue
		}
		// No answer to the ping, or the connection failed: subscribe
		// again on a new one.
		pinged = time.Time{}
		if ps = resubscribe(ps); ps == nil {
			return
		}
	}
}

// isTimeout reports whether err is a read that timed out.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
