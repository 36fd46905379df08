package lab11_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// shippedKey is the shipped LockKey's answer, which every fix replaces.
const shippedKey = `	return "lock:orders"`

func key(code string, imports ...string) []labs.Edit {
	edits := []labs.Edit{labs.Replace(shippedKey, code)}
	if len(imports) > 0 {
		block := "import (\n"
		for _, i := range imports {
			block += "\t\"" + i + "\"\n"
		}
		edits = append(edits, labs.Replace("package lab11\n", "package lab11\n\n"+block+")\n"))
	}
	return edits
}

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// TestLab11_Exercise with a message that names it, and the right fix.
var wrongFixes = []labs.WrongFix{
	{
		Name:  "the right fix: one lock per order",
		Edits: key(`	return "lock:order:" + orderID`),
		Right: true,
	},
	{
		Name:   "a key of its own for every call (a random suffix): no two workers ever wait",
		Edits:  key(`	return "lock:order:" + orderID + ":" + token.New()`, "github.com/locklab/locklab/internal/token"),
		Caught: "locked different keys for the same order",
	},
	{
		Name:   "a key that names the process: each instance locks alone",
		Edits:  key(`	return fmt.Sprintf("lock:order:%s:%d", orderID, os.Getpid())`, "fmt", "os"),
		Caught: "locked different keys for the same order",
	},
}

func TestLab11_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
