package labs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// keyWatch reads what happens to one key on the server itself, through
// Redis's keyspace notifications: every command that changed the key (a
// DEL, a SET, a PEXPIRE, an HINCRBY) and every expiry, in the order the
// server applied them. A key "left alone" is one whose watch saw nothing:
// comparing its value before and after cannot tell a key left alone from
// one deleted and written back with the same value, or whose TTL was
// renewed.
type keyWatch struct {
	s      *Scene
	key    string
	mark   string
	client *redis.Client
	sub    *redis.PubSub
}

// keywatchFlush is the channel a [keyWatch] publishes its marker on.
const keywatchFlush = "labs:keywatch"

// watchKey starts watching key on the first node: it turns the node's
// keyspace notifications on (notify-keyspace-events KA) and returns once
// the server has confirmed the subscription, so that everything done to
// the key from then on is seen. [keyWatch.touched] says what was.
func (s *Scene) watchKey(key string) *keyWatch {
	s.t.Helper()
	s.Must(s.Redis().ConfigSet(s.Ctx, "notify-keyspace-events", "KA").Err())
	c := s.Node().Client()
	s.t.Cleanup(func() { _ = c.Close() })
	w := &keyWatch{s: s, key: key, client: c, mark: fmt.Sprintf("mark %d", time.Now().UnixNano())}
	w.sub = c.Subscribe(s.Ctx, "__keyspace@0__:"+key, keywatchFlush)
	s.t.Cleanup(func() { _ = w.sub.Close() })
	for range 2 { // one confirmation per channel
		if _, err := w.sub.Receive(s.Ctx); err != nil {
			s.Fatalf("labs: watchKey(%s): %v", key, err)
		}
	}
	return w
}

// touched returns what was done to the key since the watch started (or
// since the last touched), in the server's order: "del", "set",
// "expire", "expired", "hincrby" and so on, as Redis names its
// notifications. It stops watching only when the scene ends.
func (w *keyWatch) touched() []string {
	w.s.t.Helper()
	// Redis applies commands one at a time, and sends a subscriber its
	// messages in that order: once the marker published now comes back,
	// every notification of what was done before it has come too.
	s := w.s
	s.Must(s.Redis().Publish(s.Ctx, keywatchFlush, w.mark).Err())
	var seen []string
	ctx, cancel := context.WithTimeout(s.Ctx, 10*time.Second)
	defer cancel()
	for {
		m, err := w.sub.ReceiveMessage(ctx)
		if err != nil {
			s.Fatalf("labs: watching %s: %v", w.key, err)
		}
		if m.Channel == keywatchFlush {
			if m.Payload == w.mark {
				return seen
			}
			continue
		}
		seen = append(seen, m.Payload)
	}
}

// leftAlone checks that nothing was done to the watched key since the
// watch started: not deleted, not written (even with the value it held),
// not renewed. holder names whose lock the key is ("B's lock") and by
// what ("A's Unlock"); it returns false, after recording a violation that
// names what was done, when the key was touched.
func (w *keyWatch) leftAlone(holder, by string) bool {
	w.s.t.Helper()
	touched := w.touched()
	if len(touched) == 0 {
		return true
	}
	what := strings.Join(touched, ", then ")
	switch {
	case contains(touched, "del") && contains(touched, "set"):
		w.s.Violation("%s touched %s in %s: the server saw %s. It was deleted and written back: a value compare sees the same token, but for a moment the key was gone (anyone could have taken the lock) and its lease started again", by, holder, w.key, what)
	case contains(touched, "del") || contains(touched, "hdel"):
		w.s.Violation("%s deleted %s in %s (the server saw %s)", by, holder, w.key, what)
	case contains(touched, "expire") || contains(touched, "pexpire"):
		w.s.Violation("%s changed the lease of %s in %s (the server saw %s): a lock that is not yours has its TTL left alone", by, holder, w.key, what)
	default:
		w.s.Violation("%s wrote to %s in %s (the server saw %s): a lock that is not yours is left alone", by, holder, w.key, what)
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
