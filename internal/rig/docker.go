//go:build docker

// The docker provider is compiled in only with the build tag "docker"
// (go test -tags docker ./..., make test-docker), so that default builds do
// not link testcontainers-go and the Docker client. It is used when
// LOCKLAB_PROVIDER=docker, or when redis-server is not on PATH,
// LOCKLAB_REDIS_ADDRS is empty and a Docker engine answers.
//
// Each node is one container of the image LOCKLAB_REDIS_IMAGE, started
// through testcontainers-go with the rig's defaults (no persistence unless
// [WithAOF], appendfsync always, diskless replication without delay). With
// LOCKLAB_REDIS_IMAGE unset the image is redis:7.4 if the engine has it,
// else locklab/redis:local if the engine has that (docker/build.sh redis
// builds it from this machine's redis-server, for machines with no
// registry), else redis:7.4 pulled once; when nothing can be had, the
// error says how to build the local image.
//
// Where the container's network lives depends on where the engine runs:
//
//   - An engine on this machine (Linux: the engine's bridge gateway is one
//     of this machine's addresses): the container shares this machine's
//     network (network mode host) and redis-server binds 127.0.0.1 on a
//     port the rig chose, exactly as an exec node does. Replicas, fault
//     proxies and sentinels then reach it at the address clients use, so
//     replication labs run too.
//   - An engine elsewhere (Docker Desktop's VM, a remote DOCKER_HOST):
//     the container's port 6379 is published on a host port the rig chose,
//     on 127.0.0.1 for Docker Desktop and on every interface of a remote
//     engine's machine. From inside a container that address is not the
//     server, so [Node.ReplicaOf] and Sentinel cannot work there; use the
//     dev container (make dev) for those labs.
//
// Either way the node keeps its address across [Node.Restart], and a
// start checks that the server answering is the container's (its unique
// --pidfile, read back with CONFIG GET), as exec nodes check their pid.
// Process control goes through the engine:
//
//   - Kill: docker kill (SIGKILL), then waits until the container stopped;
//   - Stop: docker stop (SIGTERM, SIGKILL after 10s);
//   - Pause/Resume: docker pause/unpause, which freezes the container's
//     processes through the cgroup freezer, as SIGSTOP does (the wall clock
//     keeps running, so keys expire meanwhile);
//   - Restart with keepData: starts the killed container again, keeping its
//     /data (the AOF); without keepData: removes it and runs a new one on
//     the same port;
//   - Pid: the container's main process as the engine reports it (a pid on
//     the engine's machine: on Docker Desktop, inside its VM).
//
// Clean-up: Close removes the container. testcontainers' reaper (Ryuk)
// is turned off (TESTCONTAINERS_RYUK_DISABLED=true unless the environment
// says otherwise), since its image cannot be pulled without a registry;
// instead every container is labelled with its owner (host name, pid and
// the pid's start time), and a new provider removes the containers of
// owners on this machine that are gone, such as a test binary killed
// mid-run. testcontainers' own log lines are silenced.
//
// Limits: [WithArgs] arguments that name files on this machine (TLS
// certificates, a config file) do not reach the container; [Strays] does
// not see containers (docker ps --filter label=org.locklab.rig does).

package rig

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/locklab/locklab/internal/token"
)

const (
	// defaultDockerImage is the image of docker nodes for a user with a
	// registry; LOCKLAB_REDIS_IMAGE overrides it.
	defaultDockerImage = "redis:7.4"
	// localDockerImage is what docker/build.sh redis builds from this
	// machine's redis-server, for machines without a registry.
	localDockerImage = "locklab/redis:local"
	// dockerHealthTimeout bounds the check that an engine answers.
	dockerHealthTimeout = 5 * time.Second
	// dockerPullTimeout bounds the one pull of the default image.
	dockerPullTimeout = 5 * time.Minute
	// dockerStopTimeout is how long docker stop waits after SIGTERM.
	dockerStopTimeout = 10 * time.Second
	// dockerOpTimeout bounds an engine call made without a context of the
	// caller's (Kill, Pause, Close...).
	dockerOpTimeout = 30 * time.Second

	// labelRig marks the rig's containers; labelOwner says whose they are.
	labelRig   = "org.locklab.rig"
	labelOwner = "org.locklab.rig.owner"
)

// buildHint is how to get an image without a registry.
const buildHint = "build one from this machine's redis-server with `make images` (docker/build.sh redis), " +
	"which makes " + localDockerImage + " (used when redis:7.4 is absent), or name an image you have with LOCKLAB_REDIS_IMAGE"

func init() { dockerProvider = newDockerProvider }

// dockerProv starts nodes as containers on a Docker engine.
type dockerProv struct {
	image string
	// hostNet: the engine runs on this machine, and containers share its
	// network (see the file comment).
	hostNet bool
	// publishIP is where published ports are bound when !hostNet: 127.0.0.1
	// for an engine reached through a local socket, every interface (the
	// zero Addr) for a remote one.
	publishIP netip.Addr
	host      string // where clients reach the nodes
	owner     string // labelOwner's value for this process
	why       string // how the image was chosen, for name()
}

// newDockerProvider returns the provider if a Docker engine answers and an
// image can be had, or an error saying why not and what to do.
// testcontainers panics on some setups without an engine; that is
// recovered into the error.
func newDockerProvider() (p provider, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("no usable Docker engine: %v", r)
		}
	}()
	// Before testcontainers reads its configuration, which it does once.
	if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	tclog.SetDefault(tclog.NewNoopLogger())

	ctx, cancel := context.WithTimeout(context.Background(), dockerHealthTimeout)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("no Docker engine found: start Docker (sudo systemctl start docker, or open Docker Desktop), or set DOCKER_HOST "+
			"(testcontainers looked at DOCKER_HOST, the Docker context and the usual sockets; the last said: %w)", err)
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		return nil, fmt.Errorf("the Docker engine at %s does not answer: %w (start it: sudo systemctl start docker, or open Docker Desktop)", cli.DaemonHost(), err)
	}
	dp := &dockerProv{owner: ownerLabel()}
	if err := dp.placeNetwork(ctx, cli); err != nil {
		return nil, err
	}
	removeOrphans(cli)
	pctx, pcancel := context.WithTimeout(context.Background(), dockerPullTimeout)
	defer pcancel()
	if dp.image, dp.why, err = chooseImage(pctx, cli); err != nil {
		return nil, err
	}
	return dp, nil
}

// placeNetwork decides where the containers' network lives (see the file
// comment). For an engine on this machine it also tells testcontainers so
// (TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1, unless set): in a machine that
// is itself a container (/.dockerenv), testcontainers would otherwise
// dial the bridge gateway.
func (p *dockerProv) placeNetwork(ctx context.Context, cli *testcontainers.DockerClient) error {
	u, err := url.Parse(cli.DaemonHost())
	if err != nil {
		return fmt.Errorf("rig: docker: engine address %q: %w", cli.DaemonHost(), err)
	}
	switch u.Scheme {
	case "unix", "npipe":
		if bridgeIsLocal(ctx, cli) {
			p.hostNet, p.host = true, "127.0.0.1"
			if _, set := os.LookupEnv("TESTCONTAINERS_HOST_OVERRIDE"); !set {
				_ = os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
			}
			return nil
		}
		// Docker Desktop: published ports appear on this machine's
		// loopback.
		p.publishIP, p.host = netip.MustParseAddr("127.0.0.1"), "127.0.0.1"
		return nil
	case "tcp", "http", "https":
		p.host = u.Hostname()
		return nil
	}
	return fmt.Errorf("rig: docker: engine address %q: unknown scheme", cli.DaemonHost())
}

// bridgeIsLocal reports whether the engine's default bridge network is
// one of this machine's interfaces (docker0, with an address in the
// bridge's subnet): then the engine runs here, in this network namespace.
// A machine that is itself a container of that engine has the subnet on
// its eth0 but no bridge interface, and is told apart.
func bridgeIsLocal(ctx context.Context, cli *testcontainers.DockerClient) bool {
	res, err := cli.NetworkInspect(ctx, "bridge", client.NetworkInspectOptions{})
	if err != nil {
		return false
	}
	name := res.Network.Options["com.docker.network.bridge.name"]
	if name == "" {
		name = "docker0"
	}
	iface, err := net.InterfaceByName(name)
	if err != nil {
		return false
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return false
	}
	for _, ia := range addrs {
		n, ok := ia.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		for _, c := range res.Network.IPAM.Config {
			if (c.Gateway.IsValid() && c.Gateway == ip.Unmap()) || (c.Subnet.IsValid() && c.Subnet.Contains(ip.Unmap())) {
				return true
			}
		}
	}
	return false
}

// chooseImage picks the nodes' image (see the file comment) and makes sure
// the engine has it, pulling the default one if need be.
func chooseImage(ctx context.Context, cli *testcontainers.DockerClient) (image, why string, err error) {
	has := func(ref string) bool {
		_, err := cli.ImageInspect(ctx, ref)
		return err == nil
	}
	if image = os.Getenv("LOCKLAB_REDIS_IMAGE"); image != "" {
		if has(image) {
			return image, "LOCKLAB_REDIS_IMAGE", nil
		}
		if image == localDockerImage {
			return "", "", fmt.Errorf("rig: docker: LOCKLAB_REDIS_IMAGE=%s is not on this engine: build it with `make images` (docker/build.sh redis)", image)
		}
		if err := pull(ctx, cli, image); err != nil {
			return "", "", fmt.Errorf("rig: docker: LOCKLAB_REDIS_IMAGE=%s is not on this engine and cannot be pulled (%v); %s", image, err, buildHint)
		}
		return image, "LOCKLAB_REDIS_IMAGE, pulled", nil
	}
	switch {
	case has(defaultDockerImage):
		return defaultDockerImage, "default", nil
	case has(localDockerImage):
		return localDockerImage, defaultDockerImage + " is not on this engine", nil
	}
	if err := pull(ctx, cli, defaultDockerImage); err != nil {
		return "", "", fmt.Errorf("rig: docker: image %s is not on this engine and cannot be pulled (%v). With no registry, %s", defaultDockerImage, err, buildHint)
	}
	return defaultDockerImage, "default, pulled", nil
}

// pull pulls ref and waits until the engine has it.
func pull(ctx context.Context, cli *testcontainers.DockerClient, ref string) error {
	resp, err := cli.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return err
	}
	defer resp.Close()
	return resp.Wait(ctx)
}

// ownerLabel names this process: host name, pid and the pid's start time
// (so that a later process with the same pid is not taken for it).
func ownerLabel() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), procStart(os.Getpid()))
}

// procStart returns the start time of process pid in clock ticks since
// boot (field 22 of /proc/pid/stat), or "" where there is no /proc.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		f := strings.Fields(s[i+1:])
		if len(f) > 19 {
			return f[19]
		}
	}
	return ""
}

// ownerGone reports whether the process an owner label names is gone: it
// ran on this machine and no process with its pid and start time runs now.
func ownerGone(owner string) bool {
	parts := strings.Split(owner, "/")
	host, _ := os.Hostname()
	if len(parts) != 3 || parts[0] != host || parts[2] == "" {
		return false // another machine's, or unknown: not ours to judge
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil {
		return false
	}
	return procStart(pid) != parts[2]
}

// removeOrphans removes the rig's containers whose owner is gone (the
// reaper's job, which is off). Errors are ignored: an orphan left is
// found again next time.
func removeOrphans(cli *testcontainers.DockerClient) {
	ctx, cancel := opContext()
	defer cancel()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", labelRig),
	})
	if err != nil {
		return
	}
	for _, c := range list.Items {
		if ownerGone(c.Labels[labelOwner]) {
			_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
	}
}

func (p *dockerProv) name() string {
	mode := "host network"
	if !p.hostNet {
		mode = "published port"
	}
	return fmt.Sprintf("docker (%s, %s; %s)", p.image, mode, p.why)
}

func (p *dockerProv) start(ctx context.Context, cfg config, _ int) (*Node, error) {
	s := &dockerServer{p: p, cfg: cfg, id: token.New()}
	err := onFreePort(portTaken, func() error {
		var err error
		if s.port, err = freePort(); err != nil {
			return err
		}
		return s.run(ctx)
	})
	if err != nil {
		return nil, err
	}
	return &Node{addr: s.addr(), ctl: s}, nil
}

// portTaken reports whether the port chosen was taken by someone else: the
// engine refused to publish it, or the server could not bind it.
func portTaken(err error) bool {
	if errors.Is(err, errAddrInUse) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "port is already allocated") || strings.Contains(msg, "address already in use")
}

// dockerServer is one Redis container.
type dockerServer struct {
	p    *dockerProv
	cfg  config
	id   string // in the server's --pidfile, to know it is ours
	port int    // kept across restarts

	mu  sync.Mutex // protects ctr
	ctr *testcontainers.DockerContainer
}

func (s *dockerServer) addr() string {
	return net.JoinHostPort(s.p.host, strconv.Itoa(s.port))
}

// pidfile is the server's --pidfile, unique to it: a start reads it back
// (CONFIG GET pidfile) to be sure the server answering is this one.
func (s *dockerServer) pidfile() string { return "/data/locklab-" + s.id + ".pid" }

func (s *dockerServer) args() []string {
	a := append(s.cfg.serverArgs(), "--pidfile", s.pidfile())
	if s.p.hostNet {
		// This machine's loopback, as an exec node.
		a = append(a, "--bind", "127.0.0.1", "--port", strconv.Itoa(s.port), "--enable-debug-command", "local")
	} else {
		// Clients come through the engine's port forwarding, not from
		// loopback, so protected mode and "local" would refuse them; the
		// port is published on loopback only (local engine).
		a = append(a, "--bind", "0.0.0.0", "--protected-mode", "no", "--enable-debug-command", "yes")
	}
	return append(a, s.cfg.args...)
}

// run creates and starts a new container on s.port and waits until the
// server answers there.
func (s *dockerServer) run(ctx context.Context) error {
	port := network.MustParsePort("6379/tcp")
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithCmd(s.args()...),
		testcontainers.WithLabels(map[string]string{labelRig: "1", labelOwner: s.p.owner}),
		testcontainers.WithLogger(tclog.NewNoopLogger()),
	}
	if s.p.hostNet {
		opts = append(opts, testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.NetworkMode = "host"
		}))
	} else {
		opts = append(opts,
			testcontainers.WithExposedPorts("6379/tcp"),
			testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
				hc.PortBindings = network.PortMap{port: {{HostIP: s.p.publishIP, HostPort: strconv.Itoa(s.port)}}}
			}))
	}
	ctr, err := testcontainers.Run(ctx, s.p.image, opts...)
	if err != nil {
		if ctr != nil {
			_ = ctr.Terminate(context.Background(), testcontainers.StopTimeout(0))
		}
		return fmt.Errorf("rig: docker: run %s on port %d: %w", s.p.image, s.port, err)
	}
	s.mu.Lock()
	s.ctr = ctr
	s.mu.Unlock()
	if err := s.waitReady(ctx); err != nil {
		_ = ctr.Terminate(context.Background(), testcontainers.StopTimeout(0))
		s.mu.Lock()
		s.ctr = nil
		s.mu.Unlock()
		return err
	}
	return nil
}

// waitReady waits until the server at s.addr() answers and is this
// container's (its pidfile is ours). A container that exits first fails
// the start: with errAddrInUse when its server could not bind the port.
func (s *dockerServer) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.readyTimeout)
	defer cancel()
	var last error
	for {
		running, _, _, err := s.state(ctx)
		if err == nil && !running {
			log := s.logTail(20)
			if strings.Contains(log, "Address already in use") {
				return fmt.Errorf("rig: docker: port %d: %w", s.port, errAddrInUse)
			}
			return fmt.Errorf("rig: docker: the container for %s exited at start; log:\n%s", s.addr(), log)
		}
		if last = s.ours(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rig: docker: %s not ready after %v: %w (last: %v); log:\n%s", s.addr(), s.cfg.readyTimeout, ctx.Err(), last, s.logTail(20))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ours reports whether the server at s.addr() is this container's (its
// pidfile is ours) and ready: PING answers PONG, not LOADING (CONFIG
// answers while the AOF is still loading). It uses a client of its own: a
// pooled client that failed to dial waits a second before it dials again,
// which would slow every start.
func (s *dockerServer) ours(ctx context.Context) error {
	c := redis.NewClient(probeOptions(s.addr(), 200*time.Millisecond))
	defer c.Close()
	cfg, err := c.ConfigGet(ctx, "pidfile").Result()
	if err != nil {
		return err
	}
	if cfg["pidfile"] != s.pidfile() {
		return fmt.Errorf("%s is answered by another server (pidfile %q)", s.addr(), cfg["pidfile"])
	}
	return c.Ping(ctx).Err()
}

func (s *dockerServer) current() *testcontainers.DockerContainer {
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

// engineCall runs call, one engine call on the container ctr (by its id),
// with a client from [engine]; an error of call is returned as
// "rig: docker <verb> <address>: ...".
func (s *dockerServer) engineCall(ctx context.Context, ctr *testcontainers.DockerContainer, verb string, call func(cli *testcontainers.DockerClient, id string) error) error {
	cli, err := engine(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	if err := call(cli, ctr.GetContainerID()); err != nil {
		return fmt.Errorf("rig: docker %s %s: %w", verb, s.addr(), err)
	}
	return nil
}

func opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), dockerOpTimeout)
}

// state reports the container's state: running, paused, and its pid.
func (s *dockerServer) state(ctx context.Context) (running, paused bool, pid int, err error) {
	ctr := s.current()
	if ctr == nil {
		return false, false, 0, nil
	}
	st, err := ctr.State(ctx)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return false, false, 0, nil
		}
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
	err := s.engineCall(ctx, ctr, "kill", func(cli *testcontainers.DockerClient, id string) error {
		_, err := cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"})
		return err
	})
	if err != nil {
		return err
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
	return s.end("stop", func(ctx context.Context, ctr *testcontainers.DockerContainer) error {
		d := dockerStopTimeout
		return ctr.Stop(ctx, &d)
	})
}

// end stops or removes the container, if there is one, with do, once it
// is unpaused (a paused container cannot be stopped); an error of do is
// returned as "rig: docker <verb> <address>: ...".
func (s *dockerServer) end(verb string, do func(ctx context.Context, ctr *testcontainers.DockerContainer) error) error {
	ctx, cancel := opContext()
	defer cancel()
	ctr := s.current()
	if ctr == nil {
		return nil
	}
	_ = s.unpause(ctx)
	if err := do(ctx, ctr); err != nil {
		return fmt.Errorf("rig: docker %s %s: %w", verb, s.addr(), err)
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
	return s.engineCall(ctx, ctr, "pause", func(cli *testcontainers.DockerClient, id string) error {
		_, err := cli.ContainerPause(ctx, id, client.ContainerPauseOptions{})
		return err
	})
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
	return s.engineCall(ctx, ctr, "unpause", func(cli *testcontainers.DockerClient, id string) error {
		_, err := cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
		return err
	})
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
		// and its port is the same.
		if err := s.current().Start(ctx); err != nil {
			return fmt.Errorf("rig: docker start %s: %w", s.addr(), err)
		}
		return s.waitReady(ctx)
	}
	// A new container on the same port. The engine may take a moment
	// to release the port of the one removed.
	if err := s.current().Terminate(ctx, testcontainers.StopTimeout(0)); err != nil {
		return fmt.Errorf("rig: docker remove %s: %w", s.addr(), err)
	}
	s.mu.Lock()
	s.ctr = nil
	s.mu.Unlock()
	return retryTaken(ctx, s.run, portTaken)
}

func (s *dockerServer) close() error {
	return s.end("remove", func(ctx context.Context, ctr *testcontainers.DockerContainer) error {
		return ctr.Terminate(ctx, testcontainers.StopTimeout(0))
	})
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
	var b strings.Builder
	sc := bufio.NewScanner(rc)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) && b.Len() == 0 {
		return ""
	}
	return tail([]byte(b.String()), lines)
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
