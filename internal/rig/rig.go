package rig

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// InstallHint is the message shown when no Redis can be found.
const InstallHint = `no Redis server available to locklab:
  - redis-server is not on PATH (LOCKLAB_REDIS_SERVER can name the binary),
  - no Docker engine answers (or the test binary was built without -tags docker), and
  - LOCKLAB_REDIS_ADDRS (external servers, "host:port,...") is empty.
Install Redis 7 with "make deps" (Debian/Ubuntu, as root: apt-get install -y redis-server redis-sentinel;
macOS: brew install redis), or, with only Docker, run the labs in the dev container (make dev)
or on Docker containers (go test -tags docker ./..., make test-docker).`

// providerEnv forces a provider: "exec" (redis-server processes) or
// "docker" (containers; the binary must be built with -tags docker).
// Unset or empty, the rig picks one (see the package doc).
const providerEnv = "LOCKLAB_PROVIDER"

// serverEnv picks the kind of server the exec provider runs: "redis"
// (redis-server, the default) or "valkey" (valkey-server, the Linux
// Foundation's fork of Redis 7.2, which several clouds and Debian now ship
// as their Redis). LOCKLAB_REDIS_SERVER, naming a binary, overrides it.
const serverEnv = "LOCKLAB_SERVER"

// Valkey reports whether the rig runs Valkey (LOCKLAB_SERVER=valkey).
func Valkey() bool { return strings.TrimSpace(os.Getenv(serverEnv)) == "valkey" }

// serverBinary returns the server binary the exec provider runs: the one
// LOCKLAB_REDIS_SERVER names, else redis-server or valkey-server (as
// LOCKLAB_SERVER says) from PATH; "" when redis-server is not there (the
// rig then looks for another provider). A kind it does not know, or a
// valkey-server that is missing, is an error.
func serverBinary() (string, error) {
	if bin := os.Getenv("LOCKLAB_REDIS_SERVER"); bin != "" {
		return bin, nil
	}
	switch kind := strings.TrimSpace(os.Getenv(serverEnv)); kind {
	case "", "redis":
		bin, _ := exec.LookPath("redis-server")
		return bin, nil
	case "valkey":
		bin, err := exec.LookPath("valkey-server")
		if err != nil {
			return "", fmt.Errorf("rig: %s=valkey, but valkey-server is not on PATH: install it with \"make deps\" (Debian 12: apt-get install -t bookworm-backports valkey-server; macOS: brew install valkey)", serverEnv)
		}
		return bin, nil
	default:
		return "", fmt.Errorf("rig: %s=%q; want redis, valkey or nothing (redis)", serverEnv, kind)
	}
}

// kindProvider returns the exec provider of the server kind that
// [WithServer] names: redis-server or valkey-server from PATH, whatever
// LOCKLAB_SERVER and LOCKLAB_REDIS_SERVER say. External servers and Docker
// cannot choose a kind per node, so with either forced it is an error.
func kindProvider(kind string) (provider, error) {
	if strings.TrimSpace(os.Getenv("LOCKLAB_REDIS_ADDRS")) != "" {
		return nil, fmt.Errorf("rig: WithServer(%q): LOCKLAB_REDIS_ADDRS names external servers, whose kind the rig cannot choose; unset it", kind)
	}
	if forced := strings.TrimSpace(os.Getenv(providerEnv)); forced != "" && forced != "exec" {
		return nil, fmt.Errorf("rig: WithServer(%q) needs the exec provider, but %s=%s", kind, providerEnv, forced)
	}
	var bin string
	switch kind {
	case "redis":
		bin = "redis-server"
	case "valkey":
		bin = "valkey-server"
	default:
		return nil, fmt.Errorf("rig: WithServer(%q): want redis or valkey", kind)
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("rig: WithServer(%q): %s is not on PATH: install it with \"make deps\"", kind, bin)
	}
	return execProvider{bin: path}, nil
}

// provider makes nodes. Exactly one is chosen per process.
type provider interface {
	name() string
	// start starts (or, for external servers, picks) the node with index i.
	start(ctx context.Context, cfg config, i int) (*Node, error)
}

var (
	provOnce sync.Once
	prov     provider
	provErr  error

	// dockerProvider, when set by docker.go, returns a provider backed by a
	// Docker engine, or an error saying why Docker is not usable.
	dockerProvider func() (provider, error)
)

func chooseProvider() (provider, error) {
	provOnce.Do(func() { prov, provErr = pickProvider() })
	return prov, provErr
}

func pickProvider() (provider, error) {
	forced := strings.TrimSpace(os.Getenv(providerEnv))
	addrs := strings.TrimSpace(os.Getenv("LOCKLAB_REDIS_ADDRS"))
	switch {
	case forced != "" && forced != "exec" && forced != "docker":
		return nil, fmt.Errorf("rig: %s=%q; want exec, docker or nothing (the rig chooses)", providerEnv, forced)
	case forced != "" && addrs != "":
		return nil, fmt.Errorf("rig: %s=%s and LOCKLAB_REDIS_ADDRS are both set; unset one (external servers are a provider of their own)", providerEnv, forced)
	case addrs != "":
		return newExternal(addrs)
	case forced == "docker":
		if dockerProvider == nil {
			return nil, fmt.Errorf("rig: %s=docker, but this test binary was built without the Docker provider: add -tags docker (go test -tags docker ./..., or make test-docker)", providerEnv)
		}
		p, err := dockerProvider()
		if err != nil {
			return nil, fmt.Errorf("rig: %s=docker: %w", providerEnv, err)
		}
		return p, nil
	}
	bin, err := serverBinary()
	if err != nil {
		return nil, err
	}
	if bin != "" {
		return execProvider{bin: bin}, nil
	}
	if forced == "exec" {
		return nil, fmt.Errorf("rig: %s=exec, but redis-server is not on PATH (LOCKLAB_REDIS_SERVER can name it): install Redis 7 with \"make deps\"", providerEnv)
	}
	reason := ""
	if dockerProvider != nil {
		p, err := dockerProvider()
		if err == nil {
			return p, nil
		}
		reason = "\n(docker: " + err.Error() + ")"
	}
	return nil, errors.New(InstallHint + reason)
}

// ProviderName names the provider in use ("exec (/usr/bin/redis-server)",
// "external", "docker"), or returns the error saying why there is none.
func ProviderName() (string, error) {
	p, err := chooseProvider()
	if err != nil {
		return "", err
	}
	return p.name(), nil
}

// HasControl reports whether the provider can kill, pause and restart
// servers.
func HasControl() bool {
	p, err := chooseProvider()
	if err != nil {
		return false
	}
	_, external := p.(*externalProvider)
	return !external
}

// RequireControl skips the test, with the reason, when the provider cannot
// control server processes (external servers). With no provider at all it
// fails the test: it never skips to green for want of Redis.
func RequireControl(tb testing.TB) {
	tb.Helper()
	p, err := chooseProvider()
	if err != nil {
		tb.Fatal(err)
	}
	if !HasControl() {
		tb.Skipf("needs process control (kill, pause, restart); provider %s has none: unset LOCKLAB_REDIS_ADDRS to use redis-server", p.name())
	}
}

// New starts one node. The caller must Close it.
func New(ctx context.Context, opts ...Option) (*Node, error) {
	return newNode(ctx, newConfig(opts), 0)
}

func newNode(ctx context.Context, cfg config, i int) (*Node, error) {
	if cfg.server != "" {
		p, err := kindProvider(cfg.server)
		if err != nil {
			return nil, err
		}
		return p.start(ctx, cfg, i)
	}
	p, err := chooseProvider()
	if err != nil {
		return nil, err
	}
	return p.start(ctx, cfg, i)
}

// NewN starts n independent nodes in parallel. On error it closes those it
// started. The caller must Close each node.
func NewN(ctx context.Context, n int, opts ...Option) ([]*Node, error) {
	cfg := newConfig(opts)
	nodes := make([]*Node, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { nodes[i], errs[i] = newNode(ctx, cfg, i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, nd := range nodes {
			if nd != nil {
				_ = nd.Close()
			}
		}
		return nil, err
	}
	return nodes, nil
}

// Start starts one node for a test and closes it in tb.Cleanup. When the
// test fails, the tail of the server's log is logged. Without Redis the test
// fails with [InstallHint].
func Start(tb testing.TB, opts ...Option) *Node {
	tb.Helper()
	return StartN(tb, 1, opts...)[0]
}

// StartN starts n independent nodes for a test, as [Start] does.
func StartN(tb testing.TB, n int, opts ...Option) []*Node {
	tb.Helper()
	nodes, err := NewN(context.Background(), n, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	for _, nd := range nodes {
		tb.Cleanup(func() {
			logTailIfFailed(tb, "redis-server", nd)
			_ = nd.Close()
		})
	}
	return nodes
}

// logTailIfFailed logs the last lines of nd's log, its start-up banner
// left out, under a line naming it what ("redis-server") and its address,
// when tb has failed.
func logTailIfFailed(tb testing.TB, what string, nd *Node) {
	tb.Helper()
	if !tb.Failed() {
		return
	}
	if log := notable(nd.LogTail(30)); log != "" {
		tb.Logf("%s %s log (last lines, start-up banner left out):\n%s", what, nd.Addr(), log)
	}
}

// externalProvider hands out servers listed in LOCKLAB_REDIS_ADDRS.
type externalProvider struct{ addrs []string }

func newExternal(list string) (*externalProvider, error) {
	var addrs []string
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, errors.New("rig: LOCKLAB_REDIS_ADDRS lists no address")
	}
	return &externalProvider{addrs: addrs}, nil
}

func (p *externalProvider) name() string { return "external (LOCKLAB_REDIS_ADDRS)" }

func (p *externalProvider) start(_ context.Context, cfg config, i int) (*Node, error) {
	if i >= len(p.addrs) {
		return nil, fmt.Errorf("rig: node %d wanted but LOCKLAB_REDIS_ADDRS lists %d servers", i+1, len(p.addrs))
	}
	if cfg.aof || len(cfg.args) > 0 {
		return nil, fmt.Errorf("rig: external server %s cannot be configured (AOF, args); unset LOCKLAB_REDIS_ADDRS", p.addrs[i])
	}
	return &Node{addr: p.addrs[i]}, nil
}

// Strays returns the pids of running redis-server processes started by the
// rig (any process, not just this one), found by the process-title marker.
func Strays() ([]int, error) {
	return processes(func(cmdline []byte) bool { return strings.HasPrefix(string(cmdline), procMarker+" ") })
}

// boring are log lines every healthy start writes.
var boring = []string{
	"oO0OoO0OoO0Oo", "Redis version=", "Configuration loaded", "monotonic clock",
	"Running mode=", "Server initialized", "Memory overcommit", "Ready to accept connections",
}

// notable drops the start-up banner from a log tail; what is left (errors,
// replication, shutdown) is worth showing when a test fails.
func notable(log string) string {
	var keep []string
	for _, l := range strings.Split(log, "\n") {
		if l == "" || slices.ContainsFunc(boring, func(b string) bool { return strings.Contains(l, b) }) {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}
