package contract_test

import (
	"context"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The contract over both client kinds. Every kind in kinds runs twice: on
// a plain *redis.Client and, as "<name>@autopipe", on go-redis's
// AutoPipeliner (client.AutoPipeline(), the blocking face users call) over
// that same client: same options (go-redis's defaults, or the rig's strict
// ones where a scenario uses them), same proxies, so every fault a scenario
// injects reaches the lock through the AutoPipeliner's batches.

// autopipeSuffix ends the name of a kind run on the AutoPipeliner.
const autopipeSuffix = "@autopipe"

// lockClient is what every lock package's client interface asks for: both
// *redis.Client and *redis.AutoPipeliner are one.
type lockClient interface {
	redis.Scripter
	SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// pipelined maps a party's client to the AutoPipeliner its locks use, for
// the clients of kinds run on the AutoPipeliner.
var pipelined sync.Map // *redis.Client -> *redis.AutoPipeliner

// pipeline makes c's locks (and Notifiers) use c's AutoPipeliner, closed
// when the test ends (before c, which t.Cleanup closes after it).
func pipeline(t *testing.T, c *redis.Client) {
	t.Helper()
	ap, err := c.AutoPipeline()
	if err != nil {
		t.Fatalf("AutoPipeline() = %v", err)
	}
	pipelined.Store(c, ap)
	t.Cleanup(func() {
		pipelined.Delete(c)
		_ = ap.Close()
	})
}

// clientOf returns the client a lock on c uses: c's AutoPipeliner when c
// belongs to a party of a kind run on it, c itself otherwise.
func clientOf(c *redis.Client) lockClient {
	if ap, ok := pipelined.Load(c); ok {
		return ap.(*redis.AutoPipeliner)
	}
	return c
}

// baseName is k's name without the client kind.
func (k kind) baseName() string {
	if k.pipelined {
		return k.name[:len(k.name)-len(autopipeSuffix)]
	}
	return k.name
}

func init() {
	n := len(kinds)
	for _, k := range kinds[:n] {
		k.name += autopipeSuffix
		k.pipelined = true
		kinds = append(kinds, k)
	}
}
