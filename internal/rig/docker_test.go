//go:build docker

package rig

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// The Docker provider's tests. Without an engine they skip, saying why,
// unless LOCKLAB_PROVIDER=docker (make test-docker, CI), which makes a
// missing engine a failure: CI must never go green by skipping them.

var (
	testProvOnce sync.Once
	testProv     *dockerProv
	testProvErr  error
)

// dockerProvider returns the provider the tests share, or skips (fails
// under LOCKLAB_PROVIDER=docker) when there is none.
func testDockerProvider(t *testing.T) *dockerProv {
	t.Helper()
	testProvOnce.Do(func() {
		p, err := newDockerProvider()
		if err == nil {
			testProv = p.(*dockerProv)
		}
		testProvErr = err
	})
	if testProvErr != nil {
		if os.Getenv(providerEnv) == "docker" {
			t.Fatalf("%s=docker but: %v", providerEnv, testProvErr)
		}
		t.Skipf("Docker: %v", testProvErr)
	}
	return testProv
}

// modes returns the network modes this engine can run: published port
// always, host network when the engine runs on this machine.
func modes(t *testing.T) map[string]*dockerProv {
	p := testDockerProvider(t)
	published := *p
	published.hostNet = false
	if !published.publishIP.IsValid() && p.hostNet {
		published.publishIP = netip.MustParseAddr("127.0.0.1")
	}
	m := map[string]*dockerProv{"published port": &published}
	if p.hostNet {
		m["host network"] = p
	}
	return m
}

// dockerNode starts a node in a container for the test.
func dockerNode(t *testing.T, p *dockerProv, opts ...Option) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	n, err := p.start(ctx, newConfig(opts), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("container log:\n%s", n.LogTail(30))
		}
		if err := n.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return n
}

func dockerCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestDockerProviderSaysWhyNot runs everywhere: without an engine the
// provider is refused with a reason, never a panic.
func TestDockerProviderSaysWhyNot(t *testing.T) {
	p, err := newDockerProvider()
	if err != nil {
		t.Logf("no Docker here: %v", err)
	}
	switch {
	case err == nil && p == nil:
		t.Fatal("newDockerProvider() = nil, nil; want a provider or an error")
	case err != nil && p != nil:
		t.Fatalf("newDockerProvider() = %v, %v; want one of them", p.name(), err)
	case err != nil && !strings.Contains(strings.ToLower(err.Error()), "docker"):
		t.Errorf("newDockerProvider() error = %q; want it to say Docker", err)
	case err == nil && !strings.HasPrefix(p.name(), "docker ("):
		t.Errorf("provider name = %q; want docker (<image>, ...)", p.name())
	}
	if dockerProvider == nil {
		t.Error("docker.go did not register dockerProvider")
	}
	if err == nil && os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		t.Error("TESTCONTAINERS_RYUK_DISABLED is unset after newDockerProvider; want it set (Ryuk's image cannot be pulled offline)")
	}
}

func TestDockerNodeAnswersOnLoopback(t *testing.T) {
	for mode, p := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			n := dockerNode(t, p)
			ctx := dockerCtx(t)
			host, port, err := net.SplitHostPort(n.Addr())
			if err != nil || port == "6379" {
				t.Fatalf("Addr() = %q; want host:port, never 6379", n.Addr())
			}
			if p.publishIP.IsValid() || p.hostNet {
				if host != "127.0.0.1" {
					t.Errorf("Addr() = %q with a local engine; want 127.0.0.1", n.Addr())
				}
			}
			c := n.Client()
			if err := c.Ping(ctx).Err(); err != nil {
				t.Fatalf("PING = %v", err)
			}
			if err := c.Do(ctx, "DEBUG", "SLEEP", "0").Err(); err != nil {
				t.Errorf("DEBUG SLEEP 0 = %v; want OK (labs use it)", err)
			}
			if cfg, err := c.ConfigGet(ctx, "appendonly").Result(); err != nil || cfg["appendonly"] != "no" {
				t.Errorf("CONFIG GET appendonly = %v, %v; want no", cfg, err)
			}
			if n.Pid() == 0 {
				t.Error("Pid() = 0 for a running container; want the engine's pid")
			}
			checkPublishedOnLoopbackOnly(t, p, n)
		})
	}
}

// checkPublishedOnLoopbackOnly checks, for a published-port node of a
// local engine, that the engine binds the port on 127.0.0.1 only.
func checkPublishedOnLoopbackOnly(t *testing.T, p *dockerProv, n *Node) {
	t.Helper()
	if p.hostNet || !p.publishIP.IsValid() {
		return
	}
	ins, err := n.ctl.(*dockerServer).current().Inspect(dockerCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for port, bindings := range ins.HostConfig.PortBindings {
		for _, b := range bindings {
			if b.HostIP.String() != "127.0.0.1" {
				t.Errorf("port %s published on %q; want 127.0.0.1 only", port, b.HostIP)
			}
		}
	}
}

func TestDockerKillAndRestartKeepTheAddress(t *testing.T) {
	for mode, p := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			n := dockerNode(t, p, WithAOF())
			ctx := dockerCtx(t)
			c := n.Client()
			if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			addr := n.Addr()
			if err := n.Kill(); err != nil {
				t.Fatalf("Kill() = %v", err)
			}
			if err := c.Ping(ctx).Err(); err == nil {
				t.Error("PING after Kill succeeded; want an error")
			}
			if n.Pid() != 0 {
				t.Errorf("Pid() after Kill = %d; want 0", n.Pid())
			}
			if err := n.Restart(ctx, true); err != nil {
				t.Fatalf("Restart(keepData) = %v", err)
			}
			if n.Addr() != addr {
				t.Errorf("Addr() after Restart = %s; want %s (the port is pinned)", n.Addr(), addr)
			}
			if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
				t.Errorf("GET k after Restart(keepData) = %q, %v; want v (AOF, fsync always)", got, err)
			}
			if err := n.Restart(ctx, false); err != nil {
				t.Fatalf("Restart(no data) = %v", err)
			}
			if n.Addr() != addr {
				t.Errorf("Addr() after Restart(no data) = %s; want %s", n.Addr(), addr)
			}
			if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
				t.Errorf("EXISTS k after Restart(no data) = %d, %v; want 0", n, err)
			}
		})
	}
}

func TestDockerPauseFreezesTheServer(t *testing.T) {
	for mode, p := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			n := dockerNode(t, p)
			ctx := dockerCtx(t)
			if err := n.Pause(); err != nil {
				t.Fatalf("Pause() = %v", err)
			}
			if err := n.Ping(300 * time.Millisecond); err == nil {
				t.Error("PING to a paused container answered; want a timeout")
			}
			if err := n.Resume(); err != nil {
				t.Fatalf("Resume() = %v", err)
			}
			if err := n.Client().Ping(ctx).Err(); err != nil {
				t.Errorf("PING after Resume = %v", err)
			}
			if err := n.Stop(); err != nil {
				t.Fatalf("Stop() = %v", err)
			}
			if err := n.Resume(); err == nil {
				t.Error("Resume() of a stopped container = nil; want an error")
			}
			var ne net.Error
			if err := n.Ping(300 * time.Millisecond); err == nil || (errors.As(err, &ne) && ne.Timeout()) {
				t.Errorf("PING after Stop = %v; want the connection refused", err)
			}
		})
	}
}

// TestDockerReplicaFollowsThroughTheAddressClientsUse: on the host
// network a container replicates from another at the address clients use,
// as labs 07 and 09 need.
func TestDockerReplicaFollowsThroughTheAddressClientsUse(t *testing.T) {
	p := testDockerProvider(t)
	if !p.hostNet {
		t.Skipf("the engine is not on this machine (provider %s): containers cannot reach each other at published addresses", p.name())
	}
	primary, replica := dockerNode(t, p), dockerNode(t, p)
	ctx := dockerCtx(t)
	if err := replica.ReplicaOf(ctx, primary.Addr()); err != nil {
		t.Fatalf("ReplicaOf(%s) = %v", primary.Addr(), err)
	}
	if err := primary.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := primary.WaitReplicas(ctx, 1, 5*time.Second); err != nil {
		t.Fatalf("WaitReplicas(1) = %v", err)
	}
	if got, err := replica.Client().Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Errorf("GET k on the replica = %q, %v; want v", got, err)
	}
}

// TestDockerStartRefusesAPortAnsweredByAnother: a port already served by
// another server is not taken for the container's (its pidfile is not
// ours); the start fails as a taken port, which start retries elsewhere.
func TestDockerStartRefusesAPortAnsweredByAnother(t *testing.T) {
	p := testDockerProvider(t)
	if !p.hostNet {
		t.Skip("a published port cannot be taken twice: the engine refuses it")
	}
	other := dockerNode(t, p)
	_, portStr, _ := net.SplitHostPort(other.Addr())
	port, _ := strconv.Atoi(portStr)
	s := &dockerServer{p: p, cfg: newConfig(nil), id: "intruder", port: port}
	err := s.run(dockerCtx(t))
	if err == nil {
		_ = s.close()
		t.Fatalf("run on %s, which another server holds, = nil; want a taken port", other.Addr())
	}
	if !portTaken(err) {
		t.Errorf("run on a taken port = %v; want errAddrInUse", err)
	}
	if s.current() != nil {
		t.Error("the failed container is still held; want it removed")
	}
}

// TestDockerOrphansAreRemoved: a container whose owner process is gone
// (the test binary was killed) is removed by the next provider.
func TestDockerOrphansAreRemoved(t *testing.T) {
	p := testDockerProvider(t)
	ctx := dockerCtx(t)
	host, _ := os.Hostname()
	gone := host + "/" + strconv.Itoa(os.Getpid()) + "/0" // our pid, another start time
	elsewhere := "some-other-host/1/1"
	ids := map[string]string{}
	for _, owner := range []string{gone, elsewhere} {
		ctr, err := testcontainers.Run(ctx, p.image,
			testcontainers.WithCmd("--port", "0"), // no listener: nothing to clash with
			testcontainers.WithLabels(map[string]string{labelRig: "1", labelOwner: owner}))
		if err != nil {
			t.Fatal(err)
		}
		ids[owner] = ctr.GetContainerID()
		t.Cleanup(func() { _ = ctr.Terminate(context.Background(), testcontainers.StopTimeout(0)) })
	}
	if !ownerGone(gone) || ownerGone(elsewhere) || ownerGone(p.owner) {
		t.Fatalf("ownerGone: %q %v, %q %v, self %q %v; want true, false, false",
			gone, ownerGone(gone), elsewhere, ownerGone(elsewhere), p.owner, ownerGone(p.owner))
	}
	cli, err := engine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	removeOrphans(cli)
	exists := func(id string) bool {
		_, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		return err == nil
	}
	if exists(ids[gone]) {
		t.Errorf("container of a gone owner %q still exists after removeOrphans", gone)
	}
	if !exists(ids[elsewhere]) {
		t.Errorf("container of another machine's owner %q was removed; want it left alone", elsewhere)
	}
}

// TestDockerImageErrorsNameTheFix: an image the engine lacks and cannot
// pull fails with the way to build one, never a hang.
func TestDockerImageErrorsNameTheFix(t *testing.T) {
	testDockerProvider(t)
	ctx := dockerCtx(t)
	cli, err := engine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	t.Setenv("LOCKLAB_REDIS_IMAGE", "locklab/no-such-image:none")
	_, _, err = chooseImage(ctx, cli)
	if err == nil {
		t.Skip("the engine pulled locklab/no-such-image:none: a registry that has it?")
	}
	for _, want := range []string{"locklab/no-such-image:none", "make images", "docker/build.sh redis"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("chooseImage error = %q; want it to name %q", err, want)
		}
	}
	// Unset, the official image is the default, and the local build the
	// fallback when the engine lacks it.
	t.Setenv("LOCKLAB_REDIS_IMAGE", "")
	img, why, err := chooseImage(ctx, cli)
	_, errOfficial := cli.ImageInspect(ctx, defaultDockerImage)
	_, errLocal := cli.ImageInspect(ctx, localDockerImage)
	switch {
	case errOfficial == nil && img != defaultDockerImage:
		t.Errorf("chooseImage() = %s (%s) with %s present; want %s", img, why, defaultDockerImage, defaultDockerImage)
	case errOfficial != nil && errLocal == nil && img != localDockerImage:
		t.Errorf("chooseImage() = %s, %v with only %s present; want it", img, err, localDockerImage)
	case err != nil && !strings.Contains(err.Error(), "make images"):
		t.Errorf("chooseImage() error = %q; want it to name make images", err)
	}
}
