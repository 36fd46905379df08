package lab03_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// shippedDel is the shipped release, the line every wrong fix replaces.
const shippedDel = `	return m.client.Del(ctx, m.key).Err()`

func release(code string) []labs.Edit { return []labs.Edit{labs.Replace(shippedDel, code)} }

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// TestLab03_Exercise or TestLab03_ExerciseStallInRelease with a message
// that names it.
var wrongFixes = []labs.WrongFix{
	{
		Name: "GET the key, compare the token in Go, then DEL",
		Edits: release(`	got, err := m.client.Get(ctx, m.key).Result()
	if errors.Is(err, redis.Nil) || err == nil && got != tok {
		return ErrNotHeld
	}
	if err != nil {
		return err
	}
	return m.client.Del(ctx, m.key).Err()`),
		Caught: "A's unlock deleted B's lock",
	},
	{
		Name: "DEL only if the key exists",
		Edits: release(`	n, err := m.client.Exists(ctx, m.key).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return m.client.Del(ctx, m.key).Err()`),
		Caught: "A's unlock deleted B's lock",
	},
	{
		Name: "DEL only while the key still has a TTL",
		Edits: release(`	ms, err := m.client.PTTL(ctx, m.key).Result()
	if err != nil {
		return err
	}
	if ms <= 0 {
		return ErrNotHeld
	}
	return m.client.Del(ctx, m.key).Err()`),
		Caught: "A's unlock deleted B's lock",
	},
	{
		Name: "the release script, given m.token after Unlock has cleared it",
		Edits: release(`	n, err := m.client.Eval(ctx, "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
		[]string{m.key}, m.token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil`),
		Caught: "left its own lock",
	},
	{
		Name: "the release script, but nil returned when it deleted nothing",
		Edits: release(`	return m.client.Eval(ctx, "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
		[]string{m.key}, tok).Err()`),
		Caught: "Unlock must return ErrNotHeld",
	},
	{
		Name: "GET and DEL queued in one MULTI",
		Edits: release(`	var get *redis.StringCmd
	_, err := m.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, m.key)
		p.Del(ctx, m.key)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if get.Val() != tok {
		return ErrNotHeld
	}
	return nil`),
		Caught: "A's unlock deleted B's lock",
	},
}

func TestLab03_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
