package lab10_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestLab10_HintThreeIsTheRightFix: the README's last hint shows the code
// of the table's right fix, so that the hint the learner copies passes
// every exercise test (the dead holder's too): the code, hint and tests
// agree. Comments and layout aside, they must be the same code.
func TestLab10_HintThreeIsTheRightFix(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, hint, ok := strings.Cut(string(readme), "<summary>Hint 3</summary>")
	if !ok {
		t.Fatal("README.md has no Hint 3")
	}
	_, hint, ok = strings.Cut(hint, "```go\n")
	if !ok {
		t.Fatal("README.md's Hint 3 has no ```go block")
	}
	hint, _, _ = strings.Cut(hint, "```")
	var right string
	for _, f := range wrongFixes {
		if f.Right {
			right = f.Edits[0].New
		}
	}
	if right == "" {
		t.Fatal("the wrong-fix table has no right fix")
	}
	if got, want := code(hint), code(right); got != want {
		t.Errorf("README.md's Hint 3 is not the table's right fix:\nhint:  %s\nright: %s", got, want)
	}
}

var (
	lineComment = regexp.MustCompile(`//[^\n]*`)
	space       = regexp.MustCompile(`\s+`)
)

// code is Go source with its comments and layout taken out.
func code(src string) string {
	return strings.TrimSpace(space.ReplaceAllString(lineComment.ReplaceAllString(src, ""), " "))
}
