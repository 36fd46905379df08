package labs_test

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/labs"
)

// The lock contract catches the broken locks of package naive with a
// message that names the broken promise, and passes the correct ones.

func TestLockContract(t *testing.T) {
	for _, tc := range []struct {
		name string
		impl *labs.Impl
		c    labs.LockContract
		want string // in a violation; "" for none
	}{
		{"correct", labs.Correct, labs.LockContract{}, ""},
		{"reentrant", labs.Reentrant, labs.LockContract{Reentrant: true}, ""},
		{"redlock", labs.Redlock, labs.LockContract{Nodes: 5, NodeRefusalIsNo: true}, ""},
		{"blind delete", labs.BlindDelete, labs.LockContract{}, "Unlock of a lock not held returns the not-held error"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			_, findings := labs.Run(t, labs.LockContractScenario(tc.c), tc.impl)
			var got []string
			for _, f := range findings {
				got = append(got, f.Sentence)
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("contract on %s: %q; want no violation", tc.name, got)
			case tc.want != "" && !strings.Contains(strings.Join(got, "\n"), tc.want):
				t.Errorf("contract on %s: %q; want a violation saying %q", tc.name, got, tc.want)
			}
		})
	}
}
