package watchdog_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
)

// rdb is a client of the server shared by the tests and Examples.
var rdb *redis.Client

func TestMain(m *testing.M) {
	rig.Main(m, 1, func(nodes []*rig.Node) { rdb = nodes[0].Client() })
}

// newKey returns a key unique to this test and deletes it at the end.
func newKey(t *testing.T) string { return locktest.Key(t, rdb, "watchdog-test") }

// witness measures how long this machine stalls a goroutine: it sleeps
// 5ms and PINGs the shared server in a loop, and keeps the worst excess
// over 5ms. Timing assertions forgive a miss that a stall at least as long
// explains: on the 2-core box these tests were written on, with other test
// binaries and compilers running (load average 6 to 10), rounds took up to
// 1.3s. Start it before leakGuard; it stops when the test ends.
//
// The witness sets GOMAXPROCS to 1 for the test. With two Ps, the OS could
// deschedule the thread running the refresher's P for 300ms while the
// witness ran on the other P and saw nothing; with one P, whatever stalls
// the refresher stalls the witness too.
type witness struct {
	base  time.Time
	round atomic.Int64 // when the current round started, in ns since base
	worst atomic.Int64 // the worst excess of a finished round, in ns
	stop  chan struct{}
	done  chan struct{}
}

func startWitness(t *testing.T) *witness {
	t.Helper()
	w := &witness{base: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	procs := runtime.GOMAXPROCS(1)
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			start := time.Now()
			w.round.Store(int64(start.Sub(w.base)))
			time.Sleep(5 * time.Millisecond)
			rdb.Ping(context.Background())
			excess := time.Since(start) - 5*time.Millisecond
			for {
				old := w.worst.Load()
				if int64(excess) <= old || w.worst.CompareAndSwap(old, int64(excess)) {
					break
				}
			}
		}
	}()
	t.Cleanup(func() {
		close(w.stop)
		<-w.done
		runtime.GOMAXPROCS(procs)
	})
	return w
}

// Stall returns the longest stall seen since the start or the last Reset,
// counting the round in progress: after a stall, the code under test may
// run before the witness finishes its round.
func (w *witness) Stall() time.Duration {
	current := time.Since(w.base) - time.Duration(w.round.Load()) - 5*time.Millisecond
	return max(time.Duration(w.worst.Load()), current)
}

// Reset forgets the stalls seen so far.
func (w *witness) Reset() { w.worst.Store(0) }

// waitClosed waits until ch is closed, failing t after d.
func waitClosed(t *testing.T, ch <-chan struct{}, d time.Duration, what string) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-ch:
		return 0
	default:
	}
	select {
	case <-ch:
		return time.Since(start)
	case <-time.After(d):
		t.Fatalf("%s: not after %v", what, d)
		return 0
	}
}

// waitKeyGone waits until key no longer exists on c, failing t after d.
func waitKeyGone(t *testing.T, c *redis.Client, key string, d time.Duration) {
	t.Helper()
	locktest.WaitGone(t, c, key, d)
}

// hookRecorder sends every hook point to a buffered channel and keeps a
// log of them for failure messages.
type hookRecorder struct {
	points chan string
	start  time.Time

	mu  sync.Mutex // protects log
	log []string
}

func newHookRecorder() *hookRecorder {
	return &hookRecorder{points: make(chan string, 1024), start: time.Now()}
}

func (h *hookRecorder) hook(_ context.Context, point string) {
	h.mu.Lock()
	h.log = append(h.log, fmt.Sprintf("+%dms %s", time.Since(h.start).Milliseconds(), point))
	h.mu.Unlock()
	select {
	case h.points <- point:
	default: // the test reads what it needs; never block the refresher
	}
}

// tail returns the last n hook points, one a line.
func (h *hookRecorder) tail(n int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.log[max(len(h.log)-n, 0):], "\n")
}

func (h *hookRecorder) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.log, "\n")
}

// waitPoint waits for point, failing t after d.
func (h *hookRecorder) waitPoint(t *testing.T, point string, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case p := <-h.points:
			if p == point {
				return
			}
		case <-timeout:
			t.Fatalf("hook point %q not reached after %v; hook points:\n%s", point, d, h)
		}
	}
}
