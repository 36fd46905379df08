package rig

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// withDocker replaces the Docker provider's constructor for one test (nil:
// a binary built without -tags docker).
func withDocker(t *testing.T, f func() (provider, error)) {
	t.Helper()
	saved := dockerProvider
	dockerProvider = f
	t.Cleanup(func() { dockerProvider = saved })
}

type fakeProvider struct{}

func (fakeProvider) name() string { return "docker (fake)" }
func (fakeProvider) start(context.Context, config, int) (*Node, error) {
	return nil, errors.New("fake")
}

// TestPickProviderHonoursLocklabProvider checks LOCKLAB_PROVIDER: a forced
// provider is used or refused with the fix, never silently replaced.
func TestPickProviderHonoursLocklabProvider(t *testing.T) {
	noRedis := func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		t.Setenv("LOCKLAB_REDIS_SERVER", "")
		t.Setenv(serverEnv, "") // the choice of provider, for Redis (make test-valkey runs this too)
	}
	engineDown := func() (provider, error) { return nil, errors.New("the Docker engine does not answer") }
	engineUp := func() (provider, error) { return fakeProvider{}, nil }
	tests := []struct {
		name     string
		env      map[string]string
		setup    func(t *testing.T)
		docker   func() (provider, error)
		want     string   // provider name prefix, when it succeeds
		wantErrs []string // all in the error, when it fails
	}{
		{name: "unknown value", env: map[string]string{providerEnv: "podman"},
			wantErrs: []string{"LOCKLAB_PROVIDER", `"podman"`, "exec, docker"}},
		{name: "forced and external", env: map[string]string{providerEnv: "docker", "LOCKLAB_REDIS_ADDRS": "127.0.0.1:7101"},
			docker: engineUp, wantErrs: []string{"LOCKLAB_PROVIDER=docker", "LOCKLAB_REDIS_ADDRS", "unset one"}},
		{name: "docker without the tag", env: map[string]string{providerEnv: "docker"},
			wantErrs: []string{"built without the Docker provider", "-tags docker", "make test-docker"}},
		{name: "docker without an engine", env: map[string]string{providerEnv: "docker"},
			docker: engineDown, wantErrs: []string{"LOCKLAB_PROVIDER=docker", "does not answer"}},
		{name: "docker even with redis-server", env: map[string]string{providerEnv: "docker", "LOCKLAB_REDIS_SERVER": "/usr/bin/redis-server"},
			docker: engineUp, want: "docker (fake)"},
		{name: "exec without redis-server", env: map[string]string{providerEnv: "exec"}, setup: noRedis,
			docker: engineUp, wantErrs: []string{"LOCKLAB_PROVIDER=exec", "redis-server is not on PATH", "make deps"}},
		{name: "exec", env: map[string]string{providerEnv: "exec", "LOCKLAB_REDIS_SERVER": "/usr/bin/redis-server"},
			docker: engineUp, want: "exec (/usr/bin/redis-server)"},
		{name: "auto: redis-server first", env: map[string]string{"LOCKLAB_REDIS_SERVER": "/usr/bin/redis-server"},
			docker: engineUp, want: "exec ("},
		{name: "auto: docker when no redis-server", setup: noRedis, docker: engineUp, want: "docker (fake)"},
		{name: "auto: nothing", setup: noRedis, docker: engineDown,
			wantErrs: []string{"make deps", "make dev", "-tags docker", "(docker: the Docker engine does not answer)"}},
		{name: "auto: nothing, no tag", setup: noRedis,
			wantErrs: []string{"make deps", "make dev", "-tags docker"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(providerEnv, "")
			t.Setenv("LOCKLAB_REDIS_ADDRS", "")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			if tt.setup != nil {
				tt.setup(t)
			}
			withDocker(t, tt.docker)
			p, err := pickProvider()
			if tt.want != "" {
				if err != nil || !strings.HasPrefix(p.name(), tt.want) {
					t.Fatalf("pickProvider() = %v, %v; want %s...", nameOf(p), err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("pickProvider() = %s, nil; want an error naming %q", nameOf(p), tt.wantErrs)
			}
			for _, w := range tt.wantErrs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("pickProvider() error = %q; want it to contain %q", err, w)
				}
			}
		})
	}
}

func nameOf(p provider) string {
	if p == nil {
		return "<nil>"
	}
	return p.name()
}
