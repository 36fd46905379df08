package composetest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// script runs one of docker/'s scripts with args and env added to this
// process's, and returns what it printed and its exit error.
func script(t *testing.T, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "docker", name), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("docker/%s %s did not end within a minute: %s", name, strings.Join(args, " "), out)
	}
	return string(out), err
}

// wantFix checks that a script failed, with a message naming each of want.
func wantFix(t *testing.T, err error, out string, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("it succeeded; want it to fail naming %q. Output:\n%s", want, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("its message does not name %q:\n%s", w, out)
		}
	}
}

// pathWithout returns a PATH of one directory holding links to the tools
// the scripts use before they look for Docker, and nothing else: no docker.
func pathWithout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, tool := range []string{"bash", "env", "dirname", "uname", "sed", "ls", "tr", "cat"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s is not on PATH: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return "PATH=" + dir
}

// TestScriptsNameTheFixWithoutDocker: with no docker command, or an engine
// that does not answer, each way in (make dev, make up, make images, make
// dev-image, the bench image and its workers on the cluster) fails at
// once, saying what to install or start.
func TestScriptsNameTheFixWithoutDocker(t *testing.T) {
	runs := []struct {
		name string
		args []string
	}{
		{"dev.sh", []string{"true"}},
		{"compose.sh", []string{"up", "redlock"}},
		{"build.sh", []string{"redis"}},
		{"build.sh", []string{"dev"}},
		{"build.sh", []string{"bench"}},
		{"bench-cluster.sh", []string{"workers", "3"}},
	}
	t.Run("no docker command", func(t *testing.T) {
		path := pathWithout(t)
		for _, r := range runs {
			out, err := script(t, []string{path}, r.name, r.args...)
			wantFix(t, err, out, "docker is not on PATH", "install Docker", "https://docs.docker.com/engine/install/")
		}
	})
	t.Run("engine does not answer", func(t *testing.T) {
		if _, err := exec.LookPath("docker"); err != nil {
			t.Skip("no docker command here")
		}
		host := "DOCKER_HOST=unix://" + filepath.Join(t.TempDir(), "no-engine.sock")
		for _, r := range runs {
			if r.name == "compose.sh" && exec.Command("docker", "compose", "version").Run() != nil {
				if _, err := exec.LookPath("docker-compose"); err != nil {
					continue // it says Compose is missing first
				}
			}
			out, err := script(t, []string{host}, r.name, r.args...)
			wantFix(t, err, out, "the Docker engine does not answer", "start it")
		}
	})
}

// TestScriptsNameTheFixForMissingImages: an image the engine lacks and
// cannot pull (no registry, or no such image) fails before anything
// starts, naming the command that builds one here. It needs an engine.
func TestScriptsNameTheFixForMissingImages(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker command here")
	}
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine answers (docker info: %v): %s", err, out)
	}
	t.Run("redis image", func(t *testing.T) {
		out, err := script(t, []string{"LOCKLAB_REDIS_IMAGE=locklab/no-such-image:none"}, "compose.sh", "up", "redlock")
		wantFix(t, err, out, "locklab/no-such-image:none", "cannot be pulled", "make images")
	})
	t.Run("dev image and its base", func(t *testing.T) {
		out, err := script(t, []string{"DEV_IMAGE=locklab/no-such-dev:none", "DEV_REGISTRY_BASE=locklab/no-such-base:none"}, "dev.sh", "true")
		wantFix(t, err, out, "locklab/no-such-dev:none is not built yet", "locklab/no-such-base:none cannot be pulled")
		// The failure itself names the fix, not only dev.sh's notice.
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "cannot be pulled") && !strings.Contains(l, "make dev-image OFFLINE=1") {
				t.Errorf("%q does not name make dev-image OFFLINE=1", l)
			}
		}
	})
}
