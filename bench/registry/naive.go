package registry

import (
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/naive"
)

// The deliberately unsafe locks of package naive, one per mistake. They run
// only when named in -impls (naive-* selects them all). Under contention
// with a TTL far above the hold, only naive-getset's mistake (GET then SET:
// two clients can both see the key empty) shows as violations; the others'
// mistakes need a crash, an expiry or a pause, which the labs stage.
// Each one's claims say where its mistake should show under the fault
// scoreboard (the scoreboard is blind if it does not); every naive lock is
// also unsafe wherever a correct single-server lock is.
func init() {
	for _, n := range []struct {
		name   string
		mk     func(c naive.Client, key string, opts ...naive.Option) Locker
		Claims Claims
	}{
		{"naive-setnx-expire", func(c naive.Client, k string, o ...naive.Option) Locker { return naive.NewSetNXThenExpire(c, k, o...) }, Claims{
			"lost-reply": mistake("SETNX's reply lost, go-redis re-sends it: refused, so no EXPIRE ever follows and the key never expires"),
			"batch-lost": mistake("SETNX in a lost batch, sent again, answers 0 to the client that set the key: no EXPIRE follows and the key never expires"),
		}},
		{"naive-getset", func(c naive.Client, k string, o ...naive.Option) Locker { return naive.NewGetThenSet(c, k, o...) }, Claims{
			"kill":       mistake("B and C both see the dead holder's key gone (GET) and both SET it"),
			"batch-lost": mistake("two clients' GETs, in one batch of the shared AutoPipeliner, both find the key free and both SET it (no NX): lost batch or not"),
		}},
		{"naive-blinddel", func(c naive.Client, k string, o ...naive.Option) Locker { return naive.NewBlindDelete(c, k, o...) }, Claims{
			"pause":      mistake("A resumes and DELs B's lock: C gets in while B is inside"),
			"latency":    mistake("A's DEL lands late and deletes B's lock"),
			"late":       mistake("a DEL delivered late deletes the next holder's lock"),
			"batch-lost": mistake("the DEL in a lost batch, sent again, deletes the key of whoever took the lock after the first run"),
		}},
		{"naive-getdel", func(c naive.Client, k string, o ...naive.Option) Locker { return naive.NewGetThenDelete(c, k, o...) }, Claims{
			"late":       mistake("the DEL after the owner check is delivered late, when the key is the next holder's"),
			"batch-lost": mistake("the DEL after the owner check, in a lost batch sent again, deletes the key of whoever took the lock after the first run"),
		}},
		{"naive-renewal", func(c naive.Client, k string, o ...naive.Option) Locker { return naive.NewBlindRenewal(c, k, o...) }, Claims{
			"pause": mistake("A resumes; its blind EXPIRE renews B's lock and A is never told"),
		}},
	} {
		register(&Lock{Name: n.name, Nodes: 1, Naive: true, Connect: connectNaive(n.mk), GaveUp: gaveUpOn(naive.ErrNotObtained), Claims: n.Claims})
	}
}

func connectNaive(mk func(naive.Client, string, ...naive.Option) Locker) func(Env) (Contender, error) {
	return func(e Env) (Contender, error) {
		return e.OneServer(func(c redis.UniversalClient, key string) Locker {
			opts := []naive.Option{naive.WithTTL(e.TTL)}
			if e.Hook != nil {
				opts = append(opts, naive.WithHook(e.Hook))
			}
			return mk(c, key, opts...)
		}), nil
	}
}
