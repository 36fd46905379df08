//go:build docker

// The docker provider is compiled in only with the build tag "docker"
// (go test -tags docker ./...), so that default builds do not link
// testcontainers-go and the Docker client. It is used when redis-server is
// not on PATH, LOCKLAB_REDIS_ADDRS is empty and a Docker engine answers.
//
// Each node is a redis:7.4 container (LOCKLAB_REDIS_IMAGE names another)
// started with testcontainers-go's Redis module, with the rig's defaults:
// no persistence unless [WithAOF], appendfsync always, diskless
// replication without delay. Its port 6379 is published on a host port
// chosen by the rig, on 127.0.0.1 when the engine runs on this machine, so
// that the node keeps its address across [Node.Restart]. Process control
// goes through the engine:
//
//   - Kill: docker kill (SIGKILL), then waits until the container stopped;
//   - Stop: docker stop (SIGTERM, SIGKILL after 10s);
//   - Pause/Resume: docker pause/unpause, which freezes the container's
//     processes through the cgroup freezer, as SIGSTOP does (the wall clock
//     keeps running, so keys expire meanwhile);
//   - Restart with keepData: starts the killed container again, keeping its
//     /data (the AOF); without keepData: removes it and runs a new one on
//     the same host port;
//   - Pid: the container's main process as the engine reports it (a pid on
//     the engine's machine: on Docker Desktop, inside its VM).
//
// Limits: [WithArgs] arguments that name files on this machine (TLS
// certificates, a config file) do not reach the container; [Node.ReplicaOf] and
// Sentinel need the servers to reach each other by the addresses clients
// use, which a published port is not (from inside a container 127.0.0.1
// is the container itself), so replication, Sentinel and Cluster labs need
// the exec provider and skip with the reason here; [Strays] does not see
// containers (testcontainers' reaper, Ryuk, removes them when the test
// process ends, unless TESTCONTAINERS_RYUK_DISABLED is set). With a remote
// engine (DOCKER_HOST=tcp://...) the port is published on all of that
// machine's interfaces, since loopback there is unreachable from here.

package rig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
)

const (
	// defaultDockerImage is the image of docker nodes; LOCKLAB_REDIS_IMAGE
	// overrides it.
	defaultDockerImage = "redis:7.4"
	// dockerHealthTimeout bounds the check that an engine answers.
	dockerHealthTimeout = 5 * time.Second
	// dockerStopTimeout is how long docker stop waits after SIGTERM.
	dockerStopTimeout = 10 * time.Second
	// dockerOpTimeout bounds an engine call made without a context of the
	// caller's (Kill, Pause, Close...).
	dockerOpTimeout = 30 * time.Second
)

func init() { dockerProvider = newDockerProvider }

// dockerProv starts nodes as containers on a Docker engine.
type dockerProv struct {
	image string
	// local reports whether the engine runs on this machine, so that ports
	// are published on 127.0.0.1 and reached there.
	local bool
	host  string // where published ports are reached
}

// newDockerProvider returns the provider if a Docker engine answers, or an
// error saying why not. testcontainers panics on some setups without an
// engine; that is recovered into the error.
func newDockerProvider() (p provider, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("no usable Docker engine: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), dockerHealthTimeout)
	defer cancel()
	gp, err := testcontainers.ProviderDefault.GetProvider()
	if err != nil {
		return nil, fmt.Errorf("no usable Docker engine: %w", err)
	}
	defer gp.Close()
	if err := gp.Health(ctx); err != nil {
		return nil, fmt.Errorf("Docker engine does not answer: %w", err)
	}
	host := "localhost"
	if dp, ok := gp.(*testcontainers.DockerProvider); ok {
		if h, err := dp.DaemonHost(ctx); err == nil && h != "" {
			host = h
		}
	}
	image := os.Getenv("LOCKLAB_REDIS_IMAGE")
	if image == "" {
		image = defaultDockerImage
	}
	dp := &dockerProv{image: image, host: host, local: isLoopbackHost(host)}
	if dp.local {
		dp.host = "127.0.0.1"
	}
	return dp, nil
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}

func (p *dockerProv) name() string { return "docker (" + p.image + ")" }

func (p *dockerProv) start(ctx context.Context, cfg config, _ int) (*Node, error) {
	s := &dockerServer{p: p, cfg: cfg}
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s.port = port
		err = s.run(ctx)
		if err == nil {
			return &Node{addr: s.addr(), ctl: s}, nil
		}
		if attempt == 4 || !portTaken(err) {
			return nil, err
		}
	}
}

// portTaken reports whether the engine refused to publish the host port
// because something else holds it.
func portTaken(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "port is already allocated") || strings.Contains(msg, "address already in use")
}

// dockerServer is one Redis container.
type dockerServer struct {
	p    *dockerProv
	cfg  config
	port int // host port, kept across restarts

	mu  sync.Mutex // protects ctr
	ctr *tcredis.RedisContainer
}

func (s *dockerServer) addr() string {
	return net.JoinHostPort(s.p.host, strconv.Itoa(s.port))
}

func (s *dockerServer) args() []string {
	aof := "no"
	if s.cfg.aof {
		aof = "yes"
	}
	a := []string{
		"--save", "",
		"--appendonly", aof,
		"--appendfsync", "always",
		// Clients come through the engine's port forwarding, not from
		// loopback, so "local" would refuse them; the port is published on
		// loopback only (local engine).
		"--enable-debug-command", "yes",
		"--repl-diskless-sync-delay", "0",
	}
	return append(a, s.cfg.args...)
}

// run creates and starts a new container on s.port and waits until PING
// answers through the published port.
func (s *dockerServer) run(ctx context.Context) error {
	hostIP := netip.Addr{} // all interfaces (remote engine)
	if s.p.local {
		hostIP = netip.MustParseAddr("127.0.0.1")
	}
	port := network.MustParsePort("6379/tcp")
	ctr, err := tcredis.Run(ctx, s.p.image,
		testcontainers.WithCmdArgs(s.args()...),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{port: {{HostIP: hostIP, HostPort: strconv.Itoa(s.port)}}}
		}),
	)
	if err != nil {
		if ctr != nil {
			_ = ctr.Terminate(context.Background())
		}
		return fmt.Errorf("rig: docker: run %s on port %d: %w", s.p.image, s.port, err)
	}
	s.mu.Lock()
	s.ctr = ctr
	s.mu.Unlock()
	return s.waitPing(ctx)
}

// waitPing polls PING through the published port until it answers PONG.
func (s *dockerServer) waitPing(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.readyTimeout)
	defer cancel()
	n := &Node{addr: s.addr()}
	for {
		err := n.Ping(200 * time.Millisecond)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rig: docker: %s not ready after %v: %w (last: %v)", s.addr(), s.cfg.readyTimeout, ctx.Err(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (s *dockerServer) current() *tcredis.RedisContainer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctr
}

// engine returns a Docker client for the calls testcontainers' Container
// does not offer (kill, pause). The caller must Close it.
func engine(ctx context.Context) (*testcontainers.DockerClient, error) {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("rig: docker client: %w", err)
	}
	return cli, nil
}

func opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), dockerOpTimeout)
}

// running reports the container's state: running, and paused.
func (s *dockerServer) state(ctx context.Context) (running, paused bool, pid int, err error) {
	ctr := s.current()
	if ctr == nil {
		return false, false, 0, nil
	}
	st, err := ctr.State(ctx)
	if err != nil {
		return false, false, 0, err
	}
	return st.Running, st.Paused, st.Pid, nil
}

func (s *dockerServer) kill() error {
	ctx, cancel := opContext()
	defer cancel()
	return s.killCtx(ctx)
}

func (s *dockerServer) killCtx(ctx context.Context) error {
	ctr := s.current()
	if ctr == nil {
		return nil
	}
	if running, _, _, err := s.state(ctx); err != nil || !running {
		return err
	}
	_ = s.unpause(ctx) // the engine refuses to kill a paused container
	cli, err := engine(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	if _, err := cli.ContainerKill(ctx, ctr.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return fmt.Errorf("rig: docker kill %s: %w", s.addr(), err)
	}
	// The kill is asynchronous; wait until the engine reports it stopped.
	for {
		running, _, _, err := s.state(ctx)
		if err != nil || !running {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rig: docker kill %s: still running: %w", s.addr(), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (s *dockerServer) stop() error {
	ctx, cancel := opContext()
	defer cancel()
	ctr := s.current()
	if ctr == nil {
		return nil
	}
	_ = s.unpause(ctx) // a paused container cannot be stopped
	d := dockerStopTimeout
	if err := ctr.Stop(ctx, &d); err != nil {
		return fmt.Errorf("rig: docker stop %s: %w", s.addr(), err)
	}
	return nil
}

func (s *dockerServer) pause() error {
	ctx, cancel := opContext()
	defer cancel()
	ctr := s.current()
	if ctr == nil {
		return fmt.Errorf("rig: pause: no container for %s", s.addr())
	}
	if running, _, _, err := s.state(ctx); err != nil || !running {
		return fmt.Errorf("rig: pause: container for %s is not running (%v)", s.addr(), err)
	}
	cli, err := engine(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	if _, err := cli.ContainerPause(ctx, ctr.GetContainerID(), client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("rig: docker pause %s: %w", s.addr(), err)
	}
	return nil
}

func (s *dockerServer) resume() error {
	ctx, cancel := opContext()
	defer cancel()
	if running, _, _, err := s.state(ctx); err != nil || !running {
		return fmt.Errorf("rig: resume: container for %s is not running (%v)", s.addr(), err)
	}
	return s.unpause(ctx)
}

// unpause unpauses the container if it is paused.
func (s *dockerServer) unpause(ctx context.Context) error {
	ctr := s.current()
	if _, paused, _, err := s.state(ctx); err != nil || !paused {
		return err
	}
	cli, err := engine(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	if _, err := cli.ContainerUnpause(ctx, ctr.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("rig: docker unpause %s: %w", s.addr(), err)
	}
	return nil
}

func (s *dockerServer) restart(ctx context.Context, keepData bool) error {
	if s.current() == nil {
		return fmt.Errorf("rig: restart %s: the container is gone (a restart failed earlier)", s.addr())
	}
	if err := s.killCtx(ctx); err != nil {
		return err
	}
	if keepData {
		// The same container: its /data, with the AOF, is still there,
		// and its port binding is the same host port.
		if err := s.current().Start(ctx); err != nil {
			return fmt.Errorf("rig: docker start %s: %w", s.addr(), err)
		}
		return s.waitPing(ctx)
	}
	// A new container on the same host port. The engine may take a moment
	// to release the port of the one removed.
	if err := s.current().Terminate(ctx); err != nil {
		return fmt.Errorf("rig: docker remove %s: %w", s.addr(), err)
	}
	s.mu.Lock()
	s.ctr = nil
	s.mu.Unlock()
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if err = s.run(ctx); err == nil || !portTaken(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return err
}

func (s *dockerServer) close() error {
	ctx, cancel := opContext()
	defer cancel()
	ctr := s.current()
	if ctr == nil {
		return nil
	}
	_ = s.unpause(ctx)
	if err := ctr.Terminate(ctx); err != nil {
		return fmt.Errorf("rig: docker remove %s: %w", s.addr(), err)
	}
	return nil
}

func (s *dockerServer) logTail(lines int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ctr := s.current()
	if ctr == nil {
		return ""
	}
	rc, err := ctr.Logs(ctx)
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil && !errors.Is(err, io.EOF) && len(b) == 0 {
		return ""
	}
	return tail(b, lines)
}

func (s *dockerServer) pid() int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	running, _, pid, err := s.state(ctx)
	if err != nil || !running {
		return 0
	}
	return pid
}
