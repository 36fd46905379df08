package locktest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/locktest"
)

// together is a "lock" that never excludes: each Lock returns only once
// every caller the WaitGroup counts has called it.
type together struct {
	arrive *sync.WaitGroup
}

func (l together) Lock(context.Context) error {
	l.arrive.Done()
	l.arrive.Wait()
	return nil
}
func (together) TryLock(context.Context) (bool, error) { return true, nil }
func (together) Unlock(context.Context) error          { return nil }

// mutex is an in-process lock that does exclude.
type mutex struct{ mu *sync.Mutex }

func (l mutex) Lock(context.Context) error            { l.mu.Lock(); return nil }
func (l mutex) TryLock(context.Context) (bool, error) { return l.mu.TryLock(), nil }
func (l mutex) Unlock(context.Context) error          { l.mu.Unlock(); return nil }

// TestTurnsSeesOverlaps: Turns reports two holders at once for locks that
// let both in, and one for a lock that excludes.
func TestTurnsSeesOverlaps(t *testing.T) {
	ctx := context.Background()
	var arrive sync.WaitGroup
	arrive.Add(2)
	// Both are inside from the barrier on; each stays a second, far longer
	// than the other needs to count itself in, even on a loaded machine.
	most, total, err := locktest.Turns(ctx, []locktest.Locker{together{&arrive}, together{&arrive}}, 1, time.Second)
	if err != nil || most != 2 || total != 2 {
		t.Errorf("Turns over a lock that lets both in = %d at most, %d, %v; want 2, 2, nil", most, total, err)
	}
	var mu sync.Mutex
	most, total, err = locktest.Turns(ctx, []locktest.Locker{mutex{&mu}, mutex{&mu}, mutex{&mu}}, 20, 0)
	if err != nil || most != 1 || total != 60 {
		t.Errorf("Turns over a sync.Mutex = %d at most, %d, %v; want 1, 60, nil", most, total, err)
	}
}
