// Package module finds the locklab module's root directory, for the tools
// and tests (labs, make progress, the bench) that run go commands or read
// and write files there.
package module

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
)

// moduleLine is go.mod's module directive for locklab.
var moduleLine = regexp.MustCompile(`(?m)^module\s+github\.com/locklab/locklab\s*$`)

// Root returns the locklab module's root: the nearest directory above the
// working directory (itself included) with a go.mod that declares
// github.com/locklab/locklab. When there is none, it returns an error
// saying notFound, the caller's words for where it must be run.
func Root(notFound string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && moduleLine.Match(mod) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New(notFound)
		}
		dir = parent
	}
}
