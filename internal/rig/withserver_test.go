package rig

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// TestWithServerStartsBothKindsInOneProcess: WithServer picks the kind per
// node, so one process (the bench's -server redis,valkey) runs a
// redis-server and a valkey-server side by side, each saying what it is in
// INFO server (Valkey 8: server_name:valkey).
func TestWithServerStartsBothKindsInOneProcess(t *testing.T) {
	if !HasControl() {
		t.Skip("external servers: the rig cannot choose their kind")
	}
	for _, bin := range []string{"redis-server", "valkey-server"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not on PATH: install it with \"make deps\"", bin)
		}
	}
	for _, kind := range []string{"redis", "valkey"} {
		n := Start(t, WithServer(kind))
		info, err := n.Client().Info(context.Background(), "server").Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(info, "server_name:valkey"); got != (kind == "valkey") {
			t.Errorf("WithServer(%q): INFO says server_name:valkey is %v; want %v:\n%s", kind, got, kind == "valkey", info)
		}
	}
}

// TestWithServerRefusesWhatItCannotStart: an unknown kind, external
// servers and a forced Docker provider are errors that say why.
func TestWithServerRefusesWhatItCannotStart(t *testing.T) {
	tests := []struct {
		name string
		kind string
		env  map[string]string
		want string
	}{
		{"unknown kind", "keydb", nil, "want redis or valkey"},
		{"external servers", "valkey", map[string]string{"LOCKLAB_REDIS_ADDRS": "127.0.0.1:1"}, "LOCKLAB_REDIS_ADDRS"},
		{"docker forced", "redis", map[string]string{providerEnv: "docker"}, "needs the exec provider"},
		{"binary missing", "valkey", map[string]string{"PATH": "/nonexistent"}, "valkey-server is not on PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			n, err := New(context.Background(), WithServer(tt.kind))
			if err == nil {
				_ = n.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(WithServer(%q)) = %v; want an error containing %q", tt.kind, err, tt.want)
			}
		})
	}
}
