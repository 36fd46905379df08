package module_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/locklab/locklab/internal/module"
)

func TestRootIsAboveTheWorkingDirectory(t *testing.T) {
	root, err := module.Root("not found")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "module", "root.go")); err != nil {
		t.Errorf("Root() = %q, which does not hold internal/module: %v", root, err)
	}
}

func TestRootOutsideTheModuleSaysWhere(t *testing.T) {
	t.Chdir(t.TempDir())
	if root, err := module.Root("run it in the repository"); err == nil || err.Error() != "run it in the repository" {
		t.Errorf("Root() outside the module = %q, %v; want the caller's error", root, err)
	}
}
