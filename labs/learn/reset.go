package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// reset restores lab num's exercise.go as shipped, from the git history:
// the version whose SHA-256 is testdata/exercise.sha256. The learner's
// version is kept beside it as exercise.go.mine, or, when an earlier reset
// kept one there, exercise.go.mine.2, .3, ...: no reset overwrites one.
func reset(root, num string, w io.Writer) error {
	labs, err := findLabs(root)
	if err != nil {
		return err
	}
	var l *lab
	for _, c := range labs {
		if c.num == num || strings.TrimLeft(c.num, "0") == strings.TrimLeft(num, "0") && num != "" {
			l = c
		}
	}
	switch {
	case l == nil:
		return fmt.Errorf("no lab %q under labs/", num)
	case l.status == noExercise:
		return fmt.Errorf("lab %s has no exercise", l.num)
	case l.status == notStarted:
		fmt.Fprintf(w, "lab %s: %s/exercise.go is as shipped already\n", l.num, l.dir)
		return nil
	}
	want, err := os.ReadFile(filepath.Join(root, l.dir, "testdata", "exercise.sha256"))
	if err != nil {
		return err
	}
	path := filepath.ToSlash(filepath.Join(l.dir, "exercise.go"))
	shipped, err := fromHistory(filepath.Join(root, l.dir), path, strings.TrimSpace(string(want)))
	if err != nil {
		return err
	}
	file := filepath.Join(root, l.dir, "exercise.go")
	mine, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	kept, already, earlier, err := keepMine(file, mine)
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, shipped, 0o644); err != nil {
		return err
	}
	keptPath := filepath.ToSlash(filepath.Join(l.dir, filepath.Base(kept)))
	fmt.Fprintf(w, "lab %s: %s restored as shipped; your version is in %s", l.num, path, keptPath)
	if already {
		fmt.Fprint(w, " (kept there by an earlier reset)")
	} else if len(earlier) > 0 {
		fmt.Fprintf(w, " (your earlier ones are kept too: %s; a reset never overwrites one)", strings.Join(earlier, ", "))
	}
	fmt.Fprintln(w)
	return nil
}

// keepMine saves mine, the learner's exercise.go at file, beside it before
// a reset, never over an earlier one: as file.mine the first time, then
// file.mine.2, file.mine.3, ... It returns the path it used (or, when mine
// is the same as a copy already kept, that copy's, and already true) and
// the names of the earlier copies.
func keepMine(file string, mine []byte) (kept string, already bool, earlier []string, err error) {
	for n := 1; ; n++ {
		path := file + ".mine"
		if n > 1 {
			path += "." + strconv.Itoa(n)
		}
		old, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return path, false, earlier, os.WriteFile(path, mine, 0o644)
		case err != nil:
			return "", false, nil, err
		case bytes.Equal(old, mine):
			return path, true, earlier, nil
		}
		earlier = append(earlier, filepath.Base(path))
	}
}

// fromHistory finds, in the git history of dir's exercise.go (path names
// it in messages), the version whose SHA-256 is want.
func fromHistory(dir, path, want string) ([]byte, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errors.New("git is not installed: restore " + path + " from a fresh copy of the repository")
	}
	out, err := exec.Command("git", "-C", dir, "log", "--format=%H", "--", "exercise.go").Output()
	if err != nil {
		return nil, fmt.Errorf("git log %s: %w (is this a git clone? if not, restore the file from a fresh copy)", path, err)
	}
	for _, commit := range strings.Fields(string(out)) {
		src, err := exec.Command("git", "-C", dir, "show", commit+":./exercise.go").Output()
		if err == nil && sha(src) == want {
			return src, nil
		}
	}
	return nil, fmt.Errorf("no commit holds %s as shipped (SHA-256 %.12s...): restore it from a fresh copy of the repository", path, want)
}
