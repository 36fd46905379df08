package lab05_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// shippedRenewal is the tutorial's renewal, the line every fix replaces.
const shippedRenewal = `		m.client.PExpire(context.Background(), m.key, m.ttl)`

// script is the owner-checked renewal script the hints lead to.
const script = `"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"`

func renewal(code string) []labs.Edit { return []labs.Edit{labs.Replace(shippedRenewal, code)} }

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// TestLab05_Exercise or TestLab05_ExerciseCutOff with a message that names
// it, and the right fix the hints lead to.
var wrongFixes = []labs.WrongFix{
	{
		Name: "the right fix: an owner-checked renewal script, and stop when it answers 0",
		Edits: renewal(`		n, err := m.client.Eval(context.Background(), ` + script + `, []string{m.key}, tok, m.ttl.Milliseconds()).Int()
		if err == nil && n == 0 {
			return // the key is gone, or someone else's: Done tells the holder
		}`),
		Right: true,
	},
	{
		Name: "the blind PEXPIRE kept, plus a local check: was I away longer than the lease?",
		Edits: []labs.Edit{
			labs.Replace(`	for {
		select {
		case <-stop:`, `	last := time.Now()
	for {
		select {
		case <-stop:`),
			renewal(`		if time.Since(last) > m.ttl {
			return // away longer than the lease: the lock may be gone
		}
		last = time.Now()
		m.client.PExpire(context.Background(), m.key, m.ttl)`)[0],
		},
		Caught: "a local check (was I away longer than the lease?) sees nothing wrong",
	},
	{
		Name:   "an owner-checked renewal script whose 0 is ignored: the watchdog goes on",
		Edits:  renewal(`		m.client.Eval(context.Background(), ` + script + `, []string{m.key}, tok, m.ttl.Milliseconds())`),
		Caught: "both in the critical section",
	},
	{
		Name: "an owner-checked renewal script, but Done closed only on an error",
		Edits: renewal(`		if err := m.client.Eval(context.Background(), ` + script + `, []string{m.key}, tok, m.ttl.Milliseconds()).Err(); err != nil {
			return
		}`),
		Caught: "both in the critical section",
	},
}

func TestLab05_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
