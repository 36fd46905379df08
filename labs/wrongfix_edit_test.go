package labs

import (
	"strings"
	"testing"
)

// shippedForEdits is a small exercise.go for the edit kinds to apply to.
const shippedForEdits = "package x\n\nvar releaseScript = redis.NewScript(`\nreturn 0`)\n\nfunc (m *Exercise) Unlock(ctx context.Context) error {\n\t// Your code here\n\treturn m.del(ctx)\n}\n\nfunc tail() {}\n"

func TestWrongFixEdits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  Edit
		want  string
		wrong string // a phrase of the error, when the edit cannot apply
	}{
		{name: "Replace", edit: Replace("return m.del(ctx)", "return nil"),
			want: strings.Replace(shippedForEdits, "return m.del(ctx)", "return nil", 1)},
		{name: "ReplaceFrom", edit: ReplaceFrom("func tail", "func other() {}\n"),
			want: strings.Replace(shippedForEdits, "func tail() {}\n", "func other() {}\n", 1)},
		{name: "ReplaceInFunc", edit: ReplaceInFunc("\t// Your code here", "\treturn nil"),
			want: strings.Replace(shippedForEdits, "\t// Your code here\n\treturn m.del(ctx)", "\treturn nil", 1)},
		{name: "ReplaceScript", edit: ReplaceScript("releaseScript", "return 1"),
			want: strings.Replace(shippedForEdits, "`\nreturn 0`", "`\nreturn 1`", 1)},
		{name: "Replace of text not there", edit: Replace("nowhere", ""), wrong: "occurs 0 times"},
		{name: "ReplaceScript of no such script", edit: ReplaceScript("acquireScript", ""), wrong: "script acquireScript"},
		{name: "ReplaceInFunc outside any function", edit: ReplaceInFunc("func tail() {}", ""), wrong: "no function's end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WrongFix{Name: tc.name, Edits: []Edit{tc.edit}}.apply(shippedForEdits)
			switch {
			case tc.wrong == "" && err != nil:
				t.Fatalf("apply = %v; want no error", err)
			case tc.wrong == "" && got != tc.want:
				t.Errorf("apply = %q; want %q", got, tc.want)
			case tc.wrong != "" && (err == nil || !strings.Contains(err.Error(), tc.wrong)):
				t.Errorf("apply error = %v; want one saying %q", err, tc.wrong)
			}
		})
	}
}
