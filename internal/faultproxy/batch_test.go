package faultproxy_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/rig"
)

// defaultClient returns a go-redis client through p on go-redis's default
// options (three retries), as users run it.
func defaultClient(t *testing.T, p *faultproxy.Proxy) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// counts reads each key's value from the server itself, not through the
// proxy.
func counts(t *testing.T, addr string, keys []string) map[string]string {
	t.Helper()
	c := redis.NewClient(rig.ClientOptions(addr))
	defer c.Close()
	got := map[string]string{}
	for _, k := range keys {
		v, err := c.Get(context.Background(), k).Result()
		if err != nil {
			t.Fatalf("GET %s = %v", k, err)
		}
		got[k] = v
	}
	return got
}

// TestDropBatchLosesAPipelineWhole: a pipeline of three INCRs is delivered
// and run, its replies are all lost with the connection, go-redis on its
// default options sends the whole pipeline again, and every INCR has run
// twice, though the caller saw no error. A pipeline sent before the rule is
// untouched.
func TestDropBatchLosesAPipelineWhole(t *testing.T) {
	n := rig.Start(t)
	p := faultproxy.Start(t, n.Addr())
	c := defaultClient(t, p)
	ctx := context.Background()
	keys := []string{"batch:a", "batch:b", "batch:c"}
	incrAll := func() ([]redis.Cmder, error) {
		return c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for _, k := range keys {
				pipe.Incr(ctx, k)
			}
			return nil
		})
	}
	if _, err := incrAll(); err != nil {
		t.Fatalf("a pipeline before any fault = %v", err)
	}

	r := p.DropBatch(faultproxy.Match{Command: "INCR"}, 1)
	cmds, err := incrAll()
	if err != nil {
		t.Fatalf("the pipeline whose replies were lost = %v; want nil (go-redis sends it again)", err)
	}
	for i, cmd := range cmds {
		if got := cmd.(*redis.IntCmd).Val(); got != 3 {
			t.Errorf("INCR %s answered %d; want 3 (once before, twice for the batch lost and sent again)", keys[i], got)
		}
	}
	want := []string{"INCR batch:a", "INCR batch:b", "INCR batch:c"}
	if got := r.Caught(); !slices.Equal(got, want) {
		t.Errorf("Caught() = %q; want the whole batch %q", got, want)
	}
	if got := r.Hits(); got != 3 {
		t.Errorf("Hits() = %d; want 3", got)
	}
	// The rule has used its one batch: the next pipeline runs once.
	if _, err := incrAll(); err != nil {
		t.Fatal(err)
	}
	for k, v := range counts(t, n.Addr(), keys) {
		if v != "4" {
			t.Errorf("%s = %s; want 4", k, v)
		}
	}
}

// TestDropBatchAutoPipeliner: concurrent callers of go-redis's
// AutoPipeliner, on its default options, share one batch; the proxy loses
// it, the AutoPipeliner sends it again, and every command of that batch
// (and only those) ran twice while each caller saw a single success.
func TestDropBatchAutoPipeliner(t *testing.T) {
	n := rig.Start(t)
	p := faultproxy.Start(t, n.Addr())
	c := defaultClient(t, p)
	ap, err := c.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ap.Close() })
	ctx := context.Background()
	if err := ap.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	const callers = 16
	keys := make([]string, callers)
	for i := range keys {
		keys[i] = fmt.Sprintf("auto:%02d", i)
	}
	r := p.DropBatch(faultproxy.Match{Command: "INCR"}, 1)
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make([]error, callers)
	)
	for i, k := range keys {
		wg.Go(func() {
			<-start
			errs[i] = ap.Incr(ctx, k).Err()
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d's INCR = %v; want nil (the AutoPipeliner sends the lost batch again)", i, err)
		}
	}
	caught := map[string]bool{}
	for _, c := range r.Caught() {
		caught[c] = true
	}
	if len(caught) == 0 {
		t.Fatal("the rule caught no batch: harness went blind")
	}
	for k, v := range counts(t, n.Addr(), keys) {
		twice := caught["INCR "+k]
		switch {
		case twice && v != "2":
			t.Errorf("%s, in the lost batch, = %s; want 2 (run, reply lost, sent again)", k, v)
		case !twice && v != "1":
			t.Errorf("%s, outside the lost batch, = %s; want 1", k, v)
		}
	}
	t.Logf("the lost batch held %d of %d callers' commands", len(caught), callers)
}
