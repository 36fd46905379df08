// Package module finds the locklab module's root directory, for the lab
// tests and tools under labs/ that run go commands or read files there.
package module

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
)

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
		if err == nil && bytes.HasPrefix(mod, []byte("module github.com/locklab/locklab\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New(notFound)
		}
		dir = parent
	}
}
