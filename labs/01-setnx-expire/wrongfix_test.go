package lab01_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// shippedTake is how the shipped TryLock takes the key and gives it its
// lease: the lines every wrong fix below replaces.
const shippedTake = `	ok, err := m.client.SetNX(ctx, m.key, tok, 0).Result()
	if err != nil || !ok {
		return false, err
	}
	m.token = tok
	m.hook(ctx, naive.HookAfterSetNX) // the lab kills the process here
	return true, m.client.PExpire(ctx, m.key, m.ttl).Err()`

func take(code string) []labs.Edit { return []labs.Edit{labs.Replace(shippedTake, code)} }

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// TestLab01_Exercise with a message that names it.
var wrongFixes = []labs.WrongFix{
	{
		Name: "SETNX and PEXPIRE in one MULTI/EXEC transaction",
		Edits: take(`	var setnx *redis.BoolCmd
	if _, err := m.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		setnx = p.SetNX(ctx, m.key, tok, 0)
		p.PExpire(ctx, m.key, m.ttl)
		return nil
	}); err != nil {
		return false, err
	}
	if !setnx.Val() {
		return false, nil
	}
	m.token = tok
	m.hook(ctx, naive.HookAfterSetNX)
	return true, nil`),
		Caught: "a PEXPIRE that runs whether or not SETNX took the key",
	},
	{
		Name: "a Lua script that runs SETNX, then PEXPIRE whatever SETNX said",
		Edits: take(`	ok, err := m.client.Eval(ctx, "local ok = redis.call('SETNX', KEYS[1], ARGV[1]) redis.call('PEXPIRE', KEYS[1], ARGV[2]) return ok",
		[]string{m.key}, tok, m.ttl.Milliseconds()).Int()
	if err != nil || ok == 0 {
		return false, err
	}
	m.token = tok
	m.hook(ctx, naive.HookAfterSetNX)
	return true, nil`),
		Caught: "a PEXPIRE that runs whether or not SETNX took the key",
	},
	{
		Name: "PEXPIRE first, then SETNX",
		// Every try, refused or not, now renews the holder's key: B's
		// tries keep A's lock alive, as in a MULTI.
		Edits: take(`	if err := m.client.PExpire(ctx, m.key, m.ttl).Err(); err != nil {
		return false, err
	}
	ok, err := m.client.SetNX(ctx, m.key, tok, 0).Result()
	if err != nil || !ok {
		return false, err
	}
	m.token = tok
	m.hook(ctx, naive.HookAfterSetNX)
	return true, nil`),
		Caught: "a PEXPIRE that runs whether or not SETNX took the key",
	},
	{
		Name: "the two commands kept, the hook call moved after PEXPIRE",
		Edits: take(`	ok, err := m.client.SetNX(ctx, m.key, tok, 0).Result()
	if err != nil || !ok {
		return false, err
	}
	m.token = tok
	err = m.client.PExpire(ctx, m.key, m.ttl).Err()
	m.hook(ctx, naive.HookAfterSetNX)
	return true, err`),
		Caught: "the key never expires",
	},
	{
		Name: "one SET NX, with the lease in whole seconds (EX)",
		Edits: take(`	err := m.client.Do(ctx, "SET", m.key, tok, "NX", "EX", int(m.ttl.Seconds())).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	m.token = tok
	m.hook(ctx, naive.HookAfterSetNX)
	return true, nil`),
		Caught: "invalid expire time",
	},
	{
		Name: "one SET NX PX, with a lease far longer than the one given",
		// Nothing renews the key: the message must not say something did.
		Edits: take(`	ok, err := m.client.SetNX(ctx, m.key, tok, 20*m.ttl).Result()
	if err != nil || !ok {
		return false, err
	}
	m.token = tok
	m.hook(ctx, naive.HookAfterSetNX)
	return true, nil`),
		Caught: "longer than the lease of 150ms the lock was given (PTTL",
	},
}

func TestLab01_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
