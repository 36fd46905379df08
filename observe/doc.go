// Package observe defines what locklab's locks report to an optional
// observer: how long a Lock waited, how long a lock was held, give-ups and
// lost locks. Each lock package takes an observer with its WithObserver
// option; with none, the cost is one nil check per call.
//
// An observer is a plain function, so it plugs into any metrics library
// without locklab depending on one:
//
//	wait := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "lock_wait_seconds"})
//	obs := func(e observe.Event) {
//		if e.Kind == observe.Acquired {
//			wait.Observe(e.Wait.Seconds())
//		}
//	}
//	m := correct.New(client, "lock:order:1001", correct.WithObserver(obs))
//
// A histogram of Acquired events' Wait is the one to alert on: a wait
// whose 99th percentile grows (past a second, say) means the lock is
// contended or a holder is stuck. Count GaveUp and Lost events too: a Lost
// event means work may have run without the lock.
//
// Observers are called synchronously, in the goroutine of the lock method
// that produced the event (or the lock's renewal goroutine, for Lost), so
// they must be fast and safe for concurrent use. Package otelobserve
// turns the events into OpenTelemetry metrics.
//
// The locklab lab labs/11-operations builds the wait alert from these
// events.
package observe
