// Package otelobserve turns what locklab's locks report (package observe)
// into OpenTelemetry metrics: how long each Lock waited and each lock was
// held, as histograms in seconds, and how many waits gave up and how many
// holds were lost, as counters. [New] returns an [observe.Func] to give
// any lock's WithObserver option; it records on the meters of the
// MeterProvider it is given, so the metrics leave the process through
// whatever exporter the application has set up (Prometheus, OTLP, ...).
//
// It exists because "alert when the lock wait p99 passes 1 s" needs the
// waits where the alerts are: a slow lock is invisible in a service's
// request metrics, which show only that requests got slower.
//
// # The metrics
//
// Instrument names follow OpenTelemetry's semantic conventions (durations
// in seconds, named *.duration); in Prometheus, through the OpenTelemetry
// exporter, each becomes the name in brackets.
//
//   - lock.wait.duration (lock_wait_duration_seconds), a histogram: how long
//     a Lock or TryLock call took, from its start until the lock was held
//     (lock.outcome "acquired") or until Lock gave up ("gave_up": a give-up
//     waited too, and leaving it out would hide the worst waits). A TryLock
//     that finds the lock taken records nothing.
//   - lock.hold.duration (lock_hold_duration_seconds), a histogram: how long
//     a lock was held, until Unlock released it ("released") or until the
//     lock found it lost ("lost").
//   - lock.give_ups (lock_give_ups_total), a counter of give-ups.
//   - lock.losses (lock_losses_total), a counter of losses: a holder that
//     may have gone on working without its lock.
//
// Every measurement carries lock.kind, the lock package ("correct",
// "watchdog", "redlock", ...); the histograms also carry lock.outcome.
// The histograms' buckets are set with [WithBuckets]; the default ones
// have a bound at exactly 1 s, so that the alert
//
//	histogram_quantile(0.99, sum by (le) (rate(lock_wait_duration_seconds_bucket[5m]))) > 1
//
// fires exactly when more than 1% of the waits took over a second.
//
// # The key, only if asked for
//
// The lock's key is left out unless [WithKey] asks for it, as attribute
// lock.key. Every distinct key is a new time series in every instrument
// (and, in Prometheus, one per bucket too), and locks are usually per
// object, "lock:order:1001", so the keys are as many as the orders: the
// SDK keeps at most 2000 attribute sets per instrument by default and
// folds the rest into one overflow series, and a metrics backend pays for
// each series it stores. Turn it on only when the keys are few and fixed
// (one lock per job, per shard); to find which keys are hot, sample the
// keys in logs or traces instead.
//
// Of locklab's packages only this one imports OpenTelemetry: the lock
// packages and package observe do not depend on it. (Lab 11's test, in the
// application's place, sets up the SDK that this package records on.)
package otelobserve
