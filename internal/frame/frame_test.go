package frame_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/frame"
	"github.com/locklab/locklab/observe"
)

var errInvalid = errors.New("kind: invalid argument")

func TestCheck(t *testing.T) {
	var zero frame.Frame // a lock New did not make
	if err := zero.Check(errInvalid); !errors.Is(err, errInvalid) || !strings.HasSuffix(err.Error(), frame.NotMade) {
		t.Errorf("zero Frame: Check() = %v; want %v: %s", err, errInvalid, frame.NotMade)
	}
	bad := errors.New("bad")
	for _, tt := range []struct {
		f    frame.Frame
		want error
	}{
		{frame.Frame{Kind: "kind"}, nil},
		{frame.Frame{Kind: "kind", Err: bad}, bad},
	} {
		if err := tt.f.Check(errInvalid); err != tt.want {
			t.Errorf("Frame{Err: %v}.Check() = %v; want %v", tt.f.Err, err, tt.want)
		}
	}
}

func TestFrame(t *testing.T) {
	var events []observe.Event
	var points []string
	f := frame.Holding[int]{Frame: frame.Frame{
		Kind: "kind",
		Key:  "key",
		Hook: func(_ context.Context, point string) { points = append(points, point) },
		Obs:  func(e observe.Event) { events = append(events, e) },
	}}
	start := time.Now()
	f.Attempted(start, false, nil) // TryLock found the lock taken: nothing to say
	f.Attempted(start, true, nil)
	f.At(t.Context(), "p")
	if len(points) != 1 || points[0] != "p" {
		t.Errorf("hook points = %q; want [p]", points)
	}
	notHeld := errors.New("not held")
	h := new(int)
	f.Cur.Set(h)
	if err := f.Ended(h, observe.Lost, notHeld); err != notHeld {
		t.Errorf("Ended(h, Lost, notHeld) = %v; want notHeld", err)
	}
	if got := f.Cur.Get(); got != nil {
		t.Errorf("Cur.Get() after Ended = %p; want nil", got)
	}
	f.Cur.Set(h)
	if err := f.Ended(h, observe.Released, nil); err != nil {
		t.Errorf("Ended(h, Released, nil) = %v; want nil", err)
	}
	want := []observe.Kind{observe.Acquired, observe.Lost, observe.Released}
	if len(events) != len(want) {
		t.Fatalf("observer got %d events (%v); want %d", len(events), events, len(want))
	}
	for i, e := range events {
		if e.Kind != want[i] || e.Lock != "kind" || e.Key != "key" {
			t.Errorf("event %d = %+v; want kind %v, lock \"kind\", key \"key\"", i, e, want[i])
		}
	}
	if events[1].Err != notHeld {
		t.Errorf("Lost event's Err = %v; want notHeld", events[1].Err)
	}

	var zero frame.Holding[int] // no hook, no observer: nothing to call
	zero.At(t.Context(), "p")
	zero.Report(observe.Released, 0, nil)
	zero.Attempted(start, true, nil)
	select {
	case <-frame.Closed():
	default:
		t.Error("Closed() is not closed")
	}
}

func TestReleasing(t *testing.T) {
	var points []string
	f := frame.Holding[int]{Frame: frame.Frame{Kind: "kind", Hook: func(_ context.Context, point string) { points = append(points, point) }}}
	notHeld := errors.New("not held")
	if h, err := f.Releasing(t.Context(), notHeld, "p"); h != nil || err != notHeld {
		t.Errorf("Releasing with no hold = %v, %v; want nil, notHeld", h, err)
	}
	if len(points) != 0 {
		t.Errorf("hook points = %q before any hold; want none", points)
	}
	want := new(int)
	f.Cur.Set(want)
	if h, err := f.Releasing(t.Context(), notHeld, "p"); h != want || err != nil {
		t.Errorf("Releasing = %p, %v; want the hold %p, nil", h, err, want)
	}
	if len(points) != 1 || points[0] != "p" {
		t.Errorf("hook points = %q; want [p]", points)
	}
	if f.Cur.Get() != want {
		t.Error("Releasing forgot the hold; want it kept until Ended")
	}
}

func TestLate(t *testing.T) {
	const ttl = time.Hour
	for _, tt := range []struct {
		sent time.Time
		want bool
	}{
		{time.Now(), false},
		{time.Now().Add(-ttl / 4), false},
		{time.Now().Add(-ttl/2 - time.Minute), true},
		{time.Now().Add(-2 * ttl), true},
	} {
		if got := frame.Late(tt.sent, ttl); got != tt.want {
			t.Errorf("Late(now-%v, %v) = %v; want %v", time.Since(tt.sent).Round(time.Minute), ttl, got, tt.want)
		}
	}
}

func TestLateAt(t *testing.T) {
	const ttl = time.Second
	sent := time.Now()
	for _, tt := range []struct {
		after time.Duration // from sent to the answer
		want  bool
	}{
		{0, false},
		{ttl / 2, false}, // exactly half left: still enough
		{ttl/2 + time.Millisecond, true},
		{2 * ttl, true},
	} {
		if got := frame.LateAt(sent, sent.Add(tt.after), ttl); got != tt.want {
			t.Errorf("LateAt(sent, sent+%v, %v) = %v; want %v", tt.after, ttl, got, tt.want)
		}
	}
}

func TestShorts(t *testing.T) {
	errNotObtained := errors.New("kind: lock not obtained")
	f := frame.Frame{Kind: "kind", Key: "key"}
	late := f.TooLate(errNotObtained, "SET", time.Now().Add(-time.Second), time.Second, "the lock was given back")
	const want = `kind: lock not obtained: "key": the SET's answer came 1s after it was sent, leaving less than half the 1s ttl; the lock was given back`
	if !errors.Is(late, errNotObtained) || late.Error() != want {
		t.Errorf("TooLate = %q; want %q, wrapping ErrNotObtained", late, want)
	}
	short := frame.Short{Err: late}
	if !frame.IsShort(short) || frame.IsShort(errors.Join(short, errors.New("release failed"))) || frame.IsShort(late) {
		t.Errorf("IsShort: want true for the Short alone, false once another error is joined or for its message")
	}

	var s frame.Shorts
	if ok, err := s.Keep(false, short); ok || err != nil {
		t.Errorf("Keep(false, Short) = %v, %v; want false, nil (a refusal)", ok, err)
	}
	transport := errors.New("dial tcp: refused")
	if ok, err := s.Keep(false, transport); ok || err != transport {
		t.Errorf("Keep(false, %v) = %v, %v; want the error as it is", transport, ok, err)
	}
	gaveUp := errors.Join(errNotObtained, context.DeadlineExceeded)
	if err := s.Join(gaveUp, errNotObtained); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), want) {
		t.Errorf("Join(gave up) = %q; want the give-up with the last short attempt joined", err)
	}
	if err := s.Join(transport, errNotObtained); err != transport {
		t.Errorf("Join(%v) = %v; want it as it is (Lock did not give up)", transport, err)
	}
	var none frame.Shorts
	if err := none.Join(gaveUp, errNotObtained); err != gaveUp {
		t.Errorf("Join with no short attempt = %v; want %v", err, gaveUp)
	}
}
