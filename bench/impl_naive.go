package main

import (
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/naive"
)

// The deliberately unsafe locks of package naive, one per mistake. They run
// only when named in -impls (naive-* selects them all). Under contention
// with a TTL far above the hold, only naive-getset's mistake (GET then SET:
// two clients can both see the key empty) shows as violations; the others'
// mistakes need a crash, an expiry or a pause, which the labs stage.
func init() {
	for name, mk := range map[string]func(c naive.Client, key string, opts ...naive.Option) locker{
		"naive-setnx-expire": func(c naive.Client, k string, o ...naive.Option) locker { return naive.NewSetNXThenExpire(c, k, o...) },
		"naive-getset":       func(c naive.Client, k string, o ...naive.Option) locker { return naive.NewGetThenSet(c, k, o...) },
		"naive-blinddel":     func(c naive.Client, k string, o ...naive.Option) locker { return naive.NewBlindDelete(c, k, o...) },
		"naive-getdel":       func(c naive.Client, k string, o ...naive.Option) locker { return naive.NewGetThenDelete(c, k, o...) },
		"naive-renewal":      func(c naive.Client, k string, o ...naive.Option) locker { return naive.NewBlindRenewal(c, k, o...) },
	} {
		register(&impl{name: name, nodes: 1, naive: true, connect: connectNaive(mk), gaveUp: gaveUpOn(naive.ErrNotObtained)})
	}
}

func connectNaive(mk func(naive.Client, string, ...naive.Option) locker) func(env) (contender, error) {
	return func(e env) (contender, error) {
		return e.oneServer(func(c *redis.Client, key string) locker {
			opts := []naive.Option{naive.WithTTL(e.ttl)}
			if e.hook != nil {
				opts = append(opts, naive.WithHook(e.hook))
			}
			return mk(c, key, opts...)
		}), nil
	}
}
