package registry

import (
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/fencing"
)

// fencing: a lock whose every acquisition mints a token from a counter key
// kept for good (so its runs leave one counter per lock name behind, by
// design), with its defaults and the common TTL.
func init() {
	register(&Lock{Name: "fencing", Order: 60, Nodes: 1, Connect: connectFencing, KeepsKeys: true, GaveUp: gaveUpOn(fencing.ErrNotObtained), Claims: fencingClaims})
}

func connectFencing(e Env) (Contender, error) {
	return e.OneServer(func(c redis.UniversalClient, key string) Locker { return fencing.New(c, key, fencing.WithTTL(e.TTL)) }), nil
}

// fencingClaims: the store refuses a stale token, whatever the timing; only
// losing tokens on the server breaks it.
var fencingClaims = Claims{
	"pause":      survives(`a holder paused past its TTL: the store refuses its stale token`),
	"lost-reply": survives(`a lost reply sent again: the acquire run twice returns the same token`),
	"late":       survives(`a command delivered late`),
	"failover":   names(`a failover before the counter replicates, when more than one token is lost`),
	"restart":    names(`a restart without data, when more than one token is lost`),
	"latency":    survives(`a write delayed in the network past the TTL: the store refuses the late write`),
	"eviction":   survives(`eviction: Lock refuses a server that evicts`),
	"clock":      survives(`a clock jump on the server: the store refuses the late write`),
	"kill":       survives(`a killed holder`),
	"batch-lost": survives(`a batch of the AutoPipeliner sent twice: the acquire run twice returns the same token, the release answers from its receipt`),
}
