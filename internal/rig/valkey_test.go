package rig

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// TestServerKindIsTheOneAskedFor: the server the rig starts is Valkey when
// LOCKLAB_SERVER=valkey and Redis otherwise, read from the server's own
// INFO (Valkey 8 reports server_name:valkey beside a redis_version of
// 7.2.4 for its clients' sake). CI runs the suites both ways.
func TestServerKindIsTheOneAskedFor(t *testing.T) {
	if !HasControl() {
		t.Skip("external servers: the rig did not choose their kind")
	}
	n := Start(t)
	info, err := n.Client().Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	isValkey := strings.Contains(info, "server_name:valkey")
	if Valkey() != isValkey {
		t.Errorf("LOCKLAB_SERVER=valkey is %v, but the server says server_name:valkey is %v:\n%s", Valkey(), isValkey, info)
	}
}

// TestServerBinary: LOCKLAB_REDIS_SERVER wins; LOCKLAB_SERVER picks
// redis-server or valkey-server from PATH; an unknown kind is an error
// that names the choices.
func TestServerBinary(t *testing.T) {
	t.Setenv("LOCKLAB_REDIS_SERVER", "/opt/my/redis-server")
	if bin, err := serverBinary(); bin != "/opt/my/redis-server" || err != nil {
		t.Errorf("serverBinary() with LOCKLAB_REDIS_SERVER = %q, %v; want it", bin, err)
	}
	t.Setenv("LOCKLAB_REDIS_SERVER", "")
	t.Setenv(serverEnv, "keydb")
	if _, err := serverBinary(); err == nil || !strings.Contains(err.Error(), "want redis, valkey") {
		t.Errorf("serverBinary() with LOCKLAB_SERVER=keydb = %v; want an error naming redis and valkey", err)
	}
	t.Setenv(serverEnv, "valkey")
	bin, err := serverBinary()
	if _, lerr := exec.LookPath("valkey-server"); lerr != nil {
		if err == nil || !strings.Contains(err.Error(), "make deps") {
			t.Errorf("serverBinary() for valkey without valkey-server = %q, %v; want an error saying how to install it", bin, err)
		}
		return
	}
	if err != nil || !strings.HasSuffix(bin, "valkey-server") {
		t.Errorf("serverBinary() with LOCKLAB_SERVER=valkey = %q, %v; want valkey-server", bin, err)
	}
}
