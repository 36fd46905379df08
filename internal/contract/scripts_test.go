package contract_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lockPackages are the packages whose Lua scripts the contract covers.
var lockPackages = []string{"correct", "fencing", "reentrant", "watchdog"} // redlock: pending

// TestScriptsSayWhatASecondRunDoes reads every lock package's Lua scripts
// and checks that each opens with a header naming its KEYS, ARGV and
// return values, and what running it twice does: a reply can be lost and
// go-redis then sends the command again, so every script must be safe to
// run twice, and say how.
func TestScriptsSayWhatASecondRunDoes(t *testing.T) {
	for _, pkg := range lockPackages {
		files, err := filepath.Glob(filepath.Join("..", "..", pkg, "*.lua"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s: no Lua scripts found (%v)", pkg, err)
			continue
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var header []string
			for _, line := range strings.Split(string(b), "\n") {
				if !strings.HasPrefix(line, "--") {
					break
				}
				header = append(header, line)
			}
			h := strings.Join(header, "\n")
			name := pkg + "/" + filepath.Base(f)
			if !strings.HasPrefix(h, "-- "+filepath.Base(f)+":") {
				t.Errorf("%s: header does not start with %q", name, "-- "+filepath.Base(f)+":")
			}
			if strings.Contains(string(b), "local function") {
				continue // a library put in front of other scripts: no KEYS of its own
			}
			for _, want := range []string{"KEYS[1]", "ARGV[1]", "Returns", "twice"} {
				if !strings.Contains(h, want) {
					t.Errorf("%s: header does not mention %q", name, want)
				}
			}
		}
	}
}
