package otelobserve_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/observe/otelobserve"
)

// Two workers contend for one order's lock, and the locks' metrics are
// served to Prometheus through OpenTelemetry's Prometheus exporter: the
// wait and hold histograms (their counts, and the waits' bucket up to 1 s;
// the other buckets depend on the machine) and the give-ups. w2 gives up
// after 20ms, far under 1 s.
func Example() {
	ctx := context.Background()

	// The application's OpenTelemetry setup: a MeterProvider whose reader
	// is the Prometheus exporter, registered on a registry that /metrics
	// serves. (Most applications use prometheus.DefaultRegisterer and
	// otel.SetMeterProvider.)
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		panic(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(ctx)
	metrics := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	defer metrics.Close()

	// One observer for every lock of the process.
	obs, err := otelobserve.New(mp)
	if err != nil {
		panic(err)
	}
	rdb := newExampleClient()
	defer rdb.Close()
	w1 := correct.New(rdb, "lock:order:1001", correct.WithObserver(obs))
	w2 := correct.New(rdb, "lock:order:1001", correct.WithObserver(obs))

	if err := w1.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("w1 acquired")
	wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	err = w2.Lock(wctx)
	cancel()
	fmt.Println("w2 gave up:", errors.Is(err, correct.ErrNotObtained))
	if err := w1.Unlock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("w1 released")
	if err := w2.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("w2 acquired")
	if err := w2.Unlock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("w2 released")

	// What Prometheus scrapes: the counts, and the waits up to 1 s, the
	// bucket the p99 alert reads.
	resp, err := http.Get(metrics.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	show := regexp.MustCompile(`^(# TYPE lock_|lock_\w+_count|lock_\w+_total|lock_wait_duration_seconds_bucket.*le="1")`)
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if show.MatchString(lines.Text()) {
			fmt.Println(lines.Text())
		}
	}
	// Output:
	// w1 acquired
	// w2 gave up: true
	// w1 released
	// w2 acquired
	// w2 released
	// # TYPE lock_give_ups_total counter
	// lock_give_ups_total{lock_kind="correct"} 1
	// # TYPE lock_hold_duration_seconds histogram
	// lock_hold_duration_seconds_count{lock_kind="correct",lock_outcome="released"} 2
	// # TYPE lock_wait_duration_seconds histogram
	// lock_wait_duration_seconds_bucket{lock_kind="correct",lock_outcome="acquired",le="1"} 2
	// lock_wait_duration_seconds_count{lock_kind="correct",lock_outcome="acquired"} 2
	// lock_wait_duration_seconds_bucket{lock_kind="correct",lock_outcome="gave_up",le="1"} 1
	// lock_wait_duration_seconds_count{lock_kind="correct",lock_outcome="gave_up"} 1
}
