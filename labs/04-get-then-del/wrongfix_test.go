package lab04_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// shippedRelease is the shipped check and delete, which every fix below
// replaces.
const shippedRelease = `	got, err := m.client.Get(ctx, m.key).Result()
	if errors.Is(err, redis.Nil) || (err == nil && got != tok) {
		return ErrNotHeld // expired, or someone else's lock now
	}
	if err != nil {
		return err
	}
	m.hook(ctx, naive.HookAfterGetMatch) // the lab parks the client here: keep this call just before the delete
	return m.client.Del(ctx, m.key).Err()`

func release(code string) []labs.Edit { return []labs.Edit{labs.Replace(shippedRelease, code)} }

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// TestLab04_Exercise or TestLab04_ExerciseStallInRelease with a message
// that names it, and the right fix the hints lead to, which passes.
var wrongFixes = []labs.WrongFix{
	{
		Name: "the right fix: WATCH the key, check it, DEL in MULTI/EXEC",
		Edits: release(`	err := m.client.Watch(ctx, func(tx *redis.Tx) error {
		got, err := tx.Get(ctx, m.key).Result()
		if errors.Is(err, redis.Nil) || err == nil && got != tok {
			return ErrNotHeld
		}
		if err != nil {
			return err
		}
		m.hook(ctx, naive.HookAfterGetMatch)
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, m.key)
			return nil
		})
		return err
	}, m.key)
	if errors.Is(err, redis.TxFailedErr) {
		return ErrNotHeld // the key changed after WATCH: not ours any more
	}
	return err`),
		Right: true,
	},
	{
		Name: "lab 03's Lua release, on a Redis that refuses scripts",
		Edits: release(`	m.hook(ctx, naive.HookAfterGetMatch)
	n, err := m.client.Eval(ctx, "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
		[]string{m.key}, tok).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil`),
		Caught: "NOPERM",
	},
	{
		Name: "WATCH, GET, then a plain DEL outside MULTI",
		Edits: release(`	return m.client.Watch(ctx, func(tx *redis.Tx) error {
		got, err := tx.Get(ctx, m.key).Result()
		if errors.Is(err, redis.Nil) || err == nil && got != tok {
			return ErrNotHeld
		}
		if err != nil {
			return err
		}
		m.hook(ctx, naive.HookAfterGetMatch)
		return tx.Del(ctx, m.key).Err()
	}, m.key)`),
		Caught: "A's unlock deleted B's lock",
	},
	{
		Name: "GET, then DEL in MULTI/EXEC, with no WATCH",
		Edits: release(`	got, err := m.client.Get(ctx, m.key).Result()
	if errors.Is(err, redis.Nil) || err == nil && got != tok {
		return ErrNotHeld
	}
	if err != nil {
		return err
	}
	m.hook(ctx, naive.HookAfterGetMatch)
	_, err = m.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, m.key)
		return nil
	})
	return err`),
		Caught: "A's unlock deleted B's lock",
	},
	{
		Name: "WATCH sent on one pooled connection, MULTI/EXEC on another",
		Edits: release(`	if err := m.client.Do(ctx, "WATCH", m.key).Err(); err != nil {
		return err
	}
	got, err := m.client.Get(ctx, m.key).Result()
	if errors.Is(err, redis.Nil) || err == nil && got != tok {
		return ErrNotHeld
	}
	if err != nil {
		return err
	}
	m.hook(ctx, naive.HookAfterGetMatch)
	_, err = m.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, m.key)
		return nil
	})
	if errors.Is(err, redis.TxFailedErr) {
		return ErrNotHeld
	}
	return err`),
		Caught: "A's unlock deleted B's lock",
	},
	{
		Name: "WATCH and MULTI/EXEC, but an aborted EXEC reported as released",
		Edits: release(`	err := m.client.Watch(ctx, func(tx *redis.Tx) error {
		got, err := tx.Get(ctx, m.key).Result()
		if errors.Is(err, redis.Nil) || err == nil && got != tok {
			return ErrNotHeld
		}
		if err != nil {
			return err
		}
		m.hook(ctx, naive.HookAfterGetMatch)
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, m.key)
			return nil
		})
		return err
	}, m.key)
	if errors.Is(err, redis.TxFailedErr) {
		return nil // the DEL did not run: nothing to do
	}
	return err`),
		Caught: "Unlock must return ErrNotHeld",
	},
}

func TestLab04_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
