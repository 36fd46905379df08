package lab00_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// shippedImports is the exercise's import block, which the wrong fixes
// below rewrite with the code under it.
const shippedImports = `import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)`

// withCorrect rewrites the exercise from its type on: imports, then code.
func withCorrect(imports, code string) []labs.Edit {
	return []labs.Edit{labs.Replace(shippedImports, imports), labs.ReplaceFrom("type Exercise struct {", code)}
}

const correctImports = `import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
)`

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// TestLab00_Exercise with a message that names it.
var wrongFixes = []labs.WrongFix{
	{
		Name: "a Redis lock whose key names the process",
		Edits: withCorrect(`import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
)`, `type Exercise struct{ m *correct.Mutex }

func NewExercise(client *redis.Client, key string, ttl time.Duration) *Exercise {
	return &Exercise{m: correct.New(client, fmt.Sprintf("%s:%d", key, os.Getpid()), correct.WithTTL(ttl))}
}

func (e *Exercise) Lock(ctx context.Context) error            { return e.m.Lock(ctx) }
func (e *Exercise) TryLock(ctx context.Context) (bool, error) { return e.m.TryLock(ctx) }
func (e *Exercise) Unlock(ctx context.Context) error          { return e.m.Unlock(ctx) }
`),
		Caught: "A and B both in the critical section",
	},
	{
		Name: "a new correct.Mutex for every call",
		Edits: withCorrect(correctImports, `type Exercise struct {
	client *redis.Client
	key    string
	ttl    time.Duration
}

func NewExercise(client *redis.Client, key string, ttl time.Duration) *Exercise {
	return &Exercise{client: client, key: key, ttl: ttl}
}

func (e *Exercise) mutex() *correct.Mutex { return correct.New(e.client, e.key, correct.WithTTL(e.ttl)) }

func (e *Exercise) Lock(ctx context.Context) error            { return e.mutex().Lock(ctx) }
func (e *Exercise) TryLock(ctx context.Context) (bool, error) { return e.mutex().TryLock(ctx) }
func (e *Exercise) Unlock(ctx context.Context) error          { return e.mutex().Unlock(ctx) }
`),
		Caught: "is still in Redis",
	},
	{
		Name: "a TryLock that waits for the lock",
		Edits: withCorrect(correctImports, `type Exercise struct{ m *correct.Mutex }

func NewExercise(client *redis.Client, key string, ttl time.Duration) *Exercise {
	return &Exercise{m: correct.New(client, key, correct.WithTTL(ttl))}
}

func (e *Exercise) Lock(ctx context.Context) error            { return e.m.Lock(ctx) }
func (e *Exercise) TryLock(ctx context.Context) (bool, error) { return true, e.m.Lock(ctx) }
func (e *Exercise) Unlock(ctx context.Context) error          { return e.m.Unlock(ctx) }
`),
		Caught: "B's TryLock has not answered",
	},
	{
		Name: "Redis in Lock and Unlock, the process mutex left in TryLock",
		Edits: []labs.Edit{labs.ReplaceInFunc(`	// Your code here (Lab 00): this slot lives in this process's memory.`, `	for {
		ok, err := m.client.SetNX(ctx, m.key, "held", m.ttl).Result()
		if err != nil || ok {
			m.held = ok
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}`), labs.Replace(`	m.held = false
	<-procMutex
	return nil`, `	m.held = false
	return m.client.Del(ctx, m.key).Err()`)},
		Caught: "A and B both in the critical section",
	},
	{
		Name: "a SET NX with no release",
		Edits: withCorrect(`import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)`, `type Exercise struct {
	client *redis.Client
	key    string
	ttl    time.Duration
}

func NewExercise(client *redis.Client, key string, ttl time.Duration) *Exercise {
	return &Exercise{client: client, key: key, ttl: ttl}
}

func (m *Exercise) Lock(ctx context.Context) error {
	for {
		if ok, err := m.TryLock(ctx); err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (m *Exercise) TryLock(ctx context.Context) (bool, error) {
	return m.client.SetNX(ctx, m.key, "held", m.ttl).Result()
}

// Unlock: the lease frees the lock.
func (m *Exercise) Unlock(ctx context.Context) error { return nil }
`),
		Caught: "is still in Redis",
	},
}

func TestLab00_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
