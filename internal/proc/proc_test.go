package proc_test

import (
	"io"
	"os"
	"os/exec"
	"testing"

	"github.com/locklab/locklab/internal/proc"
)

// TestStartPiped: the child reads fd 3 and writes fd 4, and what it
// writes is what it read.
func TestStartPiped(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "cat <&3 >&4")
	w, r, err := proc.StartPiped(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := io.WriteString(w, "ping\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "ping\n" {
		t.Errorf("the child echoed %q; want %q", got, "ping\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("Wait() = %v; want nil", err)
	}
}

func TestStartPipedRefusesExtraFiles(t *testing.T) {
	cmd := exec.Command("/bin/true")
	cmd.ExtraFiles = []*os.File{os.Stdin}
	if _, _, err := proc.StartPiped(cmd); err == nil {
		t.Error("StartPiped with ExtraFiles set = nil error; want one")
	}
}
