package lab00_test

import (
	"strings"

	"github.com/locklab/locklab/labs"
)

// rawImports is the import block of a lock written on go-redis alone.
const rawImports = `import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/token"
)`

// rawLock is a right lock on go-redis alone, SET NX PX with a random token
// and an owner-checked release, with the slots the wrong fixes below fill
// in: SETNX for the take (given the ctx to use and the lease), SET_ERR for
// what TryLock does with the SET's error, WAIT_CTX for the context Lock's
// loop watches.
const rawLock = `type Exercise struct {
	client *redis.Client
	key    string
	ttl    time.Duration
	token  string
}

func NewExercise(client *redis.Client, key string, ttl time.Duration) *Exercise {
	return &Exercise{client: client, key: key, ttl: ttl}
}

func (m *Exercise) Lock(ctx context.Context) error {
	for {
		if ok, err := m.TryLock(WAIT_CTX); err != nil || ok {
			return err
		}
		select {
		case <-WAIT_CTX.Done():
			return WAIT_CTX.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (m *Exercise) TryLock(ctx context.Context) (bool, error) {
	tok := token.New()
	ok, err := m.client.SetNX(ctx, m.key, tok, TTL).Result()
	SET_ERR
	if ok {
		m.token = tok
	}
	return ok, nil
}

func (m *Exercise) Unlock(ctx context.Context) error {
	n, err := m.client.Eval(ctx, ` + "`" + `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0` + "`" + `,
		[]string{m.key}, m.token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return errors.New("lab00: lock not held")
	}
	return nil
}
`

// raw returns the edits that make the exercise rawLock with its slots
// filled.
func raw(ttl, setErr, waitCtx string) []labs.Edit {
	code := strings.NewReplacer("TTL", ttl, "SET_ERR", setErr, "WAIT_CTX", waitCtx).Replace(rawLock)
	return withCorrect(rawImports, code)
}

const surface = `if err != nil {
		return false, err
	}`

// contractWrongFixes are wrong fixes of the classes no lesson scenario
// looks for, caught by the contract (TestLab00_ExerciseContract): the TTL
// ignored, the context ignored, an error dropped. They join the lab's
// table, with the right fix they break.
var contractWrongFixes = []labs.WrongFix{
	{
		Name:  "the right fix on go-redis alone: SET NX PX with a token, an owner-checked release",
		Edits: raw("m.ttl", surface, "ctx"),
		Right: true,
	},
	{
		Name:   "SET NX with no lease: the TTL it is given ignored",
		Edits:  raw("0", surface, "ctx"),
		Caught: "has no TTL in Redis",
	},
	{
		Name:   "SET NX with a lease of its own (30s), not the one it is given",
		Edits:  raw("30*time.Second", surface, "ctx"),
		Caught: "the TTL it is given must be the TTL in Redis",
	},
	{
		Name:   "a Lock that waits on context.Background(), not its caller's",
		Edits:  raw("m.ttl", surface, "context.Background()"),
		Caught: "Lock must honour its context",
	},
	{
		Name:   "SET NX's error dropped: a refused SET taken for a held lock",
		Edits:  raw("m.ttl", `_ = err`, "ctx"),
		Caught: "an error from Redis must surface",
	},
}

// procAndRedis is the fix nobody lists: the shipped process mutex kept,
// and a right Redis lock taken under it. Two processes are kept apart; but
// a Lock in the process of a holder whose lease ran out waits on the
// process's slot, which Redis knows nothing of.
const procAndRedis = `type Exercise struct{ m *correct.Mutex }

var inProcess = make(chan struct{}, 1)

func NewExercise(client *redis.Client, key string, ttl time.Duration) *Exercise {
	return &Exercise{m: correct.New(client, key, correct.WithTTL(ttl))}
}

func (e *Exercise) Lock(ctx context.Context) error {
	select {
	case inProcess <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := e.m.Lock(ctx); err != nil {
		<-inProcess
		return err
	}
	return nil
}

func (e *Exercise) TryLock(ctx context.Context) (bool, error) {
	select {
	case inProcess <- struct{}{}:
	default:
		return false, nil
	}
	ok, err := e.m.TryLock(ctx)
	if !ok || err != nil {
		<-inProcess
	}
	return ok, err
}

func (e *Exercise) Unlock(ctx context.Context) error {
	err := e.m.Unlock(ctx)
	select {
	case <-inProcess:
	default:
	}
	return err
}
`

func init() {
	wrongFixes = append(wrongFixes, contractWrongFixes...)
	wrongFixes = append(wrongFixes, labs.WrongFix{
		Name:   "the process mutex kept, and a Redis lock taken under it",
		Edits:  withCorrect(correctImports, procAndRedis),
		Caught: "Lock waits on something that is not in Redis",
	})
}
