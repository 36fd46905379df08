package lab10_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// loop is the edit that replaces the shipped Lock's loop, which every fix
// below rewrites: from its first line to the end of Lock.
func loop(code string) []labs.Edit {
	return []labs.Edit{labs.ReplaceInFunc("\tfor {\n\t\tok, err := m.TryLock(ctx)", code)}
}

// boundedWait waits for a release message at most one lease, then tries
// again: a holder that dies publishes nothing.
const boundedWait = `		m.hook(ctx, correct.HookRefused)
		wait, cancel := context.WithTimeout(ctx, m.ttl)
		_, _ = sub.ReceiveMessage(wait) // a release, or a lease gone by: try again
		cancel()
		if ctx.Err() != nil {
			return errors.Join(ErrNotObtained, ctx.Err())
		}
	}`

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// one of the lab's exercise tests with a message that names it, and the
// right fix.
var wrongFixes = []labs.WrongFix{
	{
		Name: "the right fix: subscribe, wait for the confirmation, then try; wait at most a lease",
		Edits: loop(`	sub := m.client.Subscribe(ctx, m.key+":released")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the confirmation: now listening
		return errors.Join(ErrNotObtained, err)
	}
	for {
		ok, err := m.TryLock(ctx)
		if err != nil || ok {
			return err
		}
` + boundedWait),
		Right: true,
	},
	{
		Name: "subscribe first, but try without waiting for the subscription's confirmation",
		Edits: loop(`	sub := m.client.Subscribe(ctx, m.key+":released")
	defer sub.Close()
	for {
		ok, err := m.TryLock(ctx)
		if err != nil || ok {
			return err
		}
` + boundedWait),
		Caught: "B slept through A's release",
	},
	{
		Name: "subscribe first and wait for the confirmation, but wait for a message with no time limit",
		Edits: loop(`	sub := m.client.Subscribe(ctx, m.key+":released")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		return errors.Join(ErrNotObtained, err)
	}
	for {
		ok, err := m.TryLock(ctx)
		if err != nil || ok {
			return err
		}
		m.hook(ctx, correct.HookRefused)
		if _, err := sub.ReceiveMessage(ctx); err != nil {
			return errors.Join(ErrNotObtained, ctx.Err())
		}
	}`),
		Caught: "waited for a release message that never comes",
	},
	{
		Name: "wait at most a lease for a message, then give up instead of trying again",
		// B returns at about one lease: the message must say when B gave
		// up, not that it waited its whole five leases.
		Edits: loop(`	sub := m.client.Subscribe(ctx, m.key+":released")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		return errors.Join(ErrNotObtained, err)
	}
	for {
		ok, err := m.TryLock(ctx)
		if err != nil || ok {
			return err
		}
		m.hook(ctx, correct.HookRefused)
		wait, cancel := context.WithTimeout(ctx, m.ttl)
		_, err = sub.ReceiveMessage(wait)
		cancel()
		if err != nil {
			return errors.Join(ErrNotObtained, err)
		}
	}`),
		Caught: "B gave up after",
	},
	{
		Name: "subscribe after the refused try, but before the hook call",
		Edits: loop(`	for {
		ok, err := m.TryLock(ctx)
		if err != nil || ok {
			return err
		}
		sub := m.client.Subscribe(ctx, m.key+":released")
		m.hook(ctx, correct.HookRefused)
		wait, cancel := context.WithTimeout(ctx, m.ttl)
		_, _ = sub.ReceiveMessage(wait)
		cancel()
		sub.Close()
		if ctx.Err() != nil {
			return errors.Join(ErrNotObtained, ctx.Err())
		}
	}`),
		Caught: "B slept through A's release",
	},
}

func TestLab10_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
