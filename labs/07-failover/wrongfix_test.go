package lab07_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// shippedGap is where the shipped TryLock takes the SET as a lock; every
// fix below adds its WAIT there.
const shippedGap = `	// Your code here (Lab 07): the primary has the key. Does a replica?
	m.token = tok`

func after(code string) []labs.Edit {
	return []labs.Edit{labs.Replace(shippedGap, code+"\n\tm.token = tok")}
}

// waitFor is a fix's WAIT: WAIT n timeout on c ("conn", the SET's
// connection, or "m.client"), a count short of n made an error saying
// "lab07: <who> acknowledged the lock", and on an error the key taken back
// with release under relCtx.
func waitFor(c, n, timeout, who, relCtx string) string {
	return `	acked, err := ` + c + `.Wait(ctx, ` + n + `, ` + timeout + `).Result()
	if err == nil && acked < ` + n + ` {
		err = errors.New("lab07: ` + who + ` acknowledged the lock")
	}
	if err != nil {
		_, relErr := m.release(` + relCtx + `, tok)
		return false, errors.Join(err, relErr)
	}`
}

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// TestLab07_Exercise with a message that names it, and the right fix.
var wrongFixes = []labs.WrongFix{
	{
		Name:  "the right fix: WAIT 1 on the SET's connection, the key taken back on a short count",
		Edits: after(waitFor("conn", "1", "time.Second", "no replica", "context.WithoutCancel(ctx)")),
		Right: true,
	},
	{
		Name:   "WAIT sent on the pooled client instead of the SET's connection",
		Edits:  after(waitFor("m.client", "1", "time.Second", "no replica", "context.WithoutCancel(ctx)")),
		Caught: "A's went on another connection than the SET's",
	},
	{
		Name: "a short count reported as a refusal, the key left on the primary",
		Edits: after(`	if acked, err := conn.Wait(ctx, 1, time.Second).Result(); err != nil || acked < 1 {
		return false, err
	}`),
		Caught: "its key stays on the primary",
	},
	{
		Name:   "WAIT 1 0: wait for a replica as long as it takes",
		Edits:  after(waitFor("conn", "1", "0", "no replica", "ctx")),
		Caught: "its key stays on the primary",
	},
	{
		Name: "WAIT's count ignored, only its error checked",
		Edits: after(`	if err := conn.Wait(ctx, 1, time.Second).Err(); err != nil {
		_, relErr := m.release(context.WithoutCancel(ctx), tok)
		return false, errors.Join(err, relErr)
	}`),
		Caught: "WAIT's count was ignored",
	},
	{
		Name:   "WAIT for every replica (2), so no lock once one is down",
		Edits:  after(waitFor("conn", "2", "time.Second", "not every replica", "context.WithoutCancel(ctx)")),
		Caught: "B could not get the lock from the new primary",
	},
	{
		// Green before refusedAsError (issue 35): the key is taken back,
		// but the refusal is reported as "taken", and Lock waits on.
		Name: "a short count taken back, but reported as (false, nil): taken by someone else",
		Edits: after(`	if acked, err := conn.Wait(ctx, 1, time.Second).Result(); err != nil || acked < 1 {
		_, relErr := m.release(context.WithoutCancel(ctx), tok)
		return false, errors.Join(err, relErr)
	}`),
		Caught: "A's TryLock answered (false, nil) while the key was free and no replica acknowledged",
	},
}

func TestLab07_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
