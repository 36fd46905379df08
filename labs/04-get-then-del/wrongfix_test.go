package lab04_test

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/labs"
)

// release is the edit that replaces the shipped check and delete, from
// the GET to the end of Unlock, which every fix below rewrites.
func release(code string) []labs.Edit {
	return []labs.Edit{labs.ReplaceInFunc("\tgot, err := m.client.Get(ctx, m.key).Result()", code)}
}

// getCheck is the GET and the token check on c ("m.client", or "tx"
// inside WATCH) that the fixes below keep from the shipped release, with
// the hook the lab parks A at.
func getCheck(c string) string {
	return `got, err := ` + c + `.Get(ctx, m.key).Result()
	if errors.Is(err, redis.Nil) || err == nil && got != tok {
		return ErrNotHeld
	}
	if err != nil {
		return err
	}
	m.hook(ctx, naive.HookAfterGetMatch)
	`
}

// multiDel queues the DEL in MULTI/EXEC on c.
func multiDel(c string) string {
	return `_, err = ` + c + `.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, m.key)
		return nil
	})
	`
}

// indent moves code one tab in: into the WATCH callback.
func indent(code string) string { return strings.ReplaceAll(code, "\n", "\n\t") }

// watched is the hints' release: WATCH the key, check it and DEL in
// MULTI/EXEC, with onAborted what it does when EXEC was aborted (the key
// changed after WATCH).
func watched(onAborted string) string {
	return `	err := m.client.Watch(ctx, func(tx *redis.Tx) error {
		` + indent(getCheck("tx")+multiDel("tx")) + `return err
	}, m.key)
	if errors.Is(err, redis.TxFailedErr) {
		` + onAborted + `
	}
	return err`
}

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// TestLab04_Exercise or TestLab04_ExerciseStallInRelease with a message
// that names it, and the right fix the hints lead to, which passes.
var wrongFixes = []labs.WrongFix{
	{
		Name:  "the right fix: WATCH the key, check it, DEL in MULTI/EXEC",
		Edits: release(watched(`return ErrNotHeld // the key changed after WATCH: not ours any more`)),
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
		Name: "lab 03's Lua release, with the hook call taken out",
		// A never stops between check and delete: the message must name
		// the refused script, not a deadline.
		Edits: append(release(`	n, err := m.client.Eval(ctx, "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
		[]string{m.key}, tok).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil`), labs.Replace("\t\"github.com/locklab/locklab/naive\"\n", "")),
		Caught: "A's Unlock failed: NOPERM",
	},
	{
		Name: "WATCH, GET, then a plain DEL outside MULTI",
		Edits: release(`	return m.client.Watch(ctx, func(tx *redis.Tx) error {
		` + indent(getCheck("tx")) + `return tx.Del(ctx, m.key).Err()
	}, m.key)`),
		Caught: "A's unlock deleted B's lock",
	},
	{
		Name:   "GET, then DEL in MULTI/EXEC, with no WATCH",
		Edits:  release("\t" + getCheck("m.client") + multiDel("m.client") + "return err"),
		Caught: "A's unlock deleted B's lock",
	},
	{
		Name: "WATCH sent on one pooled connection, MULTI/EXEC on another",
		Edits: release(`	if err := m.client.Do(ctx, "WATCH", m.key).Err(); err != nil {
		return err
	}
	` + getCheck("m.client") + multiDel("m.client") + `if errors.Is(err, redis.TxFailedErr) {
		return ErrNotHeld
	}
	return err`),
		Caught: "A's unlock deleted B's lock",
	},
	{
		Name:   "WATCH and MULTI/EXEC, but an aborted EXEC reported as released",
		Edits:  release(watched(`return nil // the DEL did not run: nothing to do`)),
		Caught: "Unlock must return ErrNotHeld",
	},
}

func TestLab04_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
