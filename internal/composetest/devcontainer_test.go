package composetest_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// devcontainer is the part of .devcontainer/devcontainer.json locklab
// sets. Decoding is strict: an unknown key fails the test.
type devcontainer struct {
	Name  string `json:"name"`
	Build struct {
		Dockerfile string `json:"dockerfile"`
		Context    string `json:"context"`
	} `json:"build"`
	WorkspaceMount    string          `json:"workspaceMount"`
	WorkspaceFolder   string          `json:"workspaceFolder"`
	RunArgs           []string        `json:"runArgs"`
	Mounts            []string        `json:"mounts"`
	PostCreateCommand string          `json:"postCreateCommand"`
	Customizations    json.RawMessage `json:"customizations"`
}

// TestDevcontainerMatchesMakeDev checks that the editors' dev container
// (.devcontainer/devcontainer.json) is the one make dev runs (docker/dev.sh,
// which CI exercises): the same Dockerfile, checkout path, cache volumes
// and init process. CI never opens an editor, so drift would go unseen.
func TestDevcontainerMatchesMakeDev(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, ".devcontainer", "devcontainer.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var dc devcontainer
	if err := dec.Decode(&dc); err != nil {
		t.Fatalf("parse .devcontainer/devcontainer.json: %v", err)
	}
	devDir := filepath.Join(root, ".devcontainer")
	dockerfile := filepath.Clean(filepath.Join(devDir, dc.Build.Dockerfile))
	if want := filepath.Join(root, "docker", "dev.Dockerfile"); dockerfile != want {
		t.Errorf("build.dockerfile %q is %s; want docker/dev.Dockerfile (what make dev builds)", dc.Build.Dockerfile, dockerfile)
	}
	if _, err := os.Stat(dockerfile); err != nil {
		t.Errorf("build.dockerfile: %v", err)
	}
	if ctx := filepath.Clean(filepath.Join(devDir, dc.Build.Context)); ctx != filepath.Join(root, "docker") {
		t.Errorf("build.context %q is %s; want docker/ (docker/build.sh's context)", dc.Build.Context, ctx)
	}

	script, err := os.ReadFile(filepath.Join(root, "docker", "dev.sh"))
	if err != nil {
		t.Fatal(err)
	}
	dev := string(script)
	if !strings.Contains(dev, "workdir=${LOCKLAB_DEV_WORKDIR:-/src}") {
		t.Error("docker/dev.sh no longer mounts the checkout at /src by default; update this test and devcontainer.json together")
	}
	if dc.WorkspaceFolder != "/src" || !strings.Contains(dc.WorkspaceMount, "target=/src") {
		t.Errorf("workspaceFolder %q, workspaceMount %q; want the checkout at /src, as make dev mounts it", dc.WorkspaceFolder, dc.WorkspaceMount)
	}
	if !slices.Contains(dc.RunArgs, "--init") || !strings.Contains(dev, "--init") {
		t.Errorf("runArgs %q; want --init in both (an init reaps what the labs' crash tests leave)", dc.RunArgs)
	}
	// Each cache volume of make dev is mounted at the same place.
	for _, v := range []struct{ volume, target string }{
		{"locklab-gomod", "/root/go/pkg/mod"},
		{"locklab-gocache", "/root/.cache/go-build"},
	} {
		if !strings.Contains(dev, v.volume+"}:"+v.target) {
			t.Errorf("docker/dev.sh does not mount %s at %s", v.volume, v.target)
		}
		want := "source=" + v.volume + ",target=" + v.target + ",type=volume"
		if !slices.Contains(dc.Mounts, want) {
			t.Errorf("devcontainer.json mounts %q; want %q (as make dev)", dc.Mounts, want)
		}
	}
	df, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(df), "GOPATH=/root/go") {
		t.Error("docker/dev.Dockerfile does not set GOPATH=/root/go, where the module cache volume is mounted")
	}
}
