package lab02_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// body is the edit that replaces ChargeOnce's code below its marker, the
// code every wrong fix below rewrites.
func body(code string) []labs.Edit {
	return []labs.Edit{labs.ReplaceInFunc("\t// Your code here (Lab 02)", code)}
}

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// TestLab02_Exercise with a message that names it.
var wrongFixes = []labs.WrongFix{
	{
		Name: "SET NX the marker, but after the charge",
		Edits: body(`	if err := client.Get(ctx, marker).Err(); err == nil {
		return false, nil
	} else if !errors.Is(err, redis.Nil) {
		return false, err
	}
	if err := charge(ctx); err != nil {
		return false, err
	}
	return client.SetNX(ctx, marker, eventID, 0).Result()`),
		Caught: "charged twice",
	},
	{
		Name: "claim with SET NX before the charge, never given back when the charge fails",
		Edits: append(body(`	claimed, err := client.SetNX(ctx, marker, eventID, 0).Result()
	if err != nil || !claimed {
		return false, err
	}
	return true, charge(ctx)`), labs.Replace("\t\"errors\"\n", "")),
		Caught: "must give its claim back",
	},
	{
		Name: "a claim that lets the same event through again (free, or marked by this event id)",
		Edits: body(`	old, err := client.SetArgs(ctx, marker, eventID, redis.SetArgs{Mode: "NX", Get: true}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	if err == nil && old != eventID {
		return false, nil // another event charged it
	}
	if err := charge(ctx); err != nil {
		client.Del(ctx, marker)
		return false, err
	}
	return true, nil`),
		Caught: "charged twice",
	},
	{
		Name: "WATCH the marker, but SET it outside MULTI",
		Edits: body(`	var charged bool
	err := client.Watch(ctx, func(tx *redis.Tx) error {
		if err := tx.Get(ctx, marker).Err(); err == nil {
			return nil
		} else if !errors.Is(err, redis.Nil) {
			return err
		}
		if err := tx.Set(ctx, marker, eventID, 0).Err(); err != nil {
			return err
		}
		charged = true
		return nil
	}, marker)
	if err != nil || !charged {
		return false, err
	}
	if err := charge(ctx); err != nil {
		client.Del(ctx, marker)
		return false, err
	}
	return true, nil`),
		Caught: "charged twice",
	},
}

func TestLab02_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
