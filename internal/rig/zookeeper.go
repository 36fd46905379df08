package rig

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/proc"
)

// ZooKeeperInstallHint is the message shown when ZooKeeper or Java cannot
// be found.
const ZooKeeperInstallHint = `no ZooKeeper server available to locklab: it needs java on PATH (LOCKLAB_JAVA can name it)
and ZooKeeper's jars (/usr/share/java/zookeeper.jar, or LOCKLAB_ZOOKEEPER_CLASSPATH).
Install them with "make deps" (Debian/Ubuntu, as root: apt-get install -y zookeeper;
macOS: brew install zookeeper, then LOCKLAB_ZOOKEEPER_CLASSPATH="$(brew --prefix zookeeper)/libexec/lib/*").`

const (
	// zkReadyTimeout bounds a start: a JVM serves in about 1.5s on an idle
	// machine, an ensemble once a leader is elected.
	zkReadyTimeout = 60 * time.Second
	// zkTick is the server's tickTime. Session timeouts must lie between
	// 2 and 20 ticks unless set explicitly (min and max below), and
	// sessions expire in tick-sized buckets: a short tick lets labs use
	// sessions of a second or two and see them end on time.
	zkTick = 200 * time.Millisecond
	// zkMinSession and zkMaxSession are the session timeouts the servers
	// accept; a client asking for less or more gets the bound.
	zkMinSession = 400 * time.Millisecond
	zkMaxSession = 60 * time.Second
	// zkMaxServers bounds what a test may ask for.
	zkMaxServers = 5
	// zkJar is where Debian's zookeeper package puts the server.
	zkJar = "/usr/share/java/zookeeper.jar"
	// zkLogJar gives the server a logger (slf4j's simple binding, to
	// stderr, into the log file); without one it logs nothing.
	zkLogJar = "/usr/share/java/slf4j-simple.jar"
)

// ZooKeeperCommand returns the java binary and the classpath of the server
// the rig runs: LOCKLAB_JAVA or java on PATH, and LOCKLAB_ZOOKEEPER_CLASSPATH
// or Debian's jars (with slf4j's simple logger when it is there). Its error
// carries [ZooKeeperInstallHint].
func ZooKeeperCommand() (java, classpath string, err error) {
	java = os.Getenv("LOCKLAB_JAVA")
	if java == "" {
		if java, err = exec.LookPath("java"); err != nil {
			return "", "", errors.New(ZooKeeperInstallHint)
		}
	}
	if cp := os.Getenv("LOCKLAB_ZOOKEEPER_CLASSPATH"); cp != "" {
		return java, cp, nil
	}
	if _, err := os.Stat(zkJar); err != nil {
		return "", "", errors.New(ZooKeeperInstallHint)
	}
	classpath = zkJar
	if _, err := os.Stat(zkLogJar); err == nil {
		classpath += ":" + zkLogJar
	}
	return java, classpath, nil
}

// ZooKeeper is a ZooKeeper server, or an ensemble of them, run as JVM
// processes on loopback, each with free ports and a data directory of its
// own. Its methods are safe for concurrent use.
//
// Faults are real: [ZKServer.Kill] (SIGKILL), [ZKServer.Pause] (SIGSTOP),
// [ZKServer.Restart] (same ports, same data), and a faultproxy in front of
// [ZKServer.Addr] for a client's partition (the way to end a client's
// session without touching the server: its heartbeats stop arriving).
// Every server's process title starts with "locklab-rig" (see
// [SystemStrays]).
type ZooKeeper struct {
	servers []*ZKServer
	daemonGroup
}

// ZKServer is one ZooKeeper server.
type ZKServer struct {
	id         int // myid, from 1
	clientPort int
	serverProcess
}

// ZooKeeperOption configures servers started by [NewZooKeeper] or
// [StartZooKeeper].
type ZooKeeperOption func(*zkConfig)

type zkConfig struct {
	jvm    []string
	noSync bool
}

// WithZooKeeperForTests makes servers that start in about half the time
// and keep up on a loaded machine: the JVM compiles with C1 only and
// collects with the serial GC, and the transaction log is not fsynced
// (forceSync=no; killing the server loses nothing, a crash of the machine
// could). Labs and tests use it; the bench does not, since both change
// throughput. The default is the JVM's and ZooKeeper's own settings.
func WithZooKeeperForTests() ZooKeeperOption {
	return func(c *zkConfig) {
		c.jvm = append(c.jvm, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
		c.noSync = true
	}
}

// NewZooKeeper starts n servers (1: standalone; 3 or 5: an ensemble that
// survives the loss of 1 or 2) and waits until each is serving. The caller
// must Close it.
func NewZooKeeper(ctx context.Context, n int, opts ...ZooKeeperOption) (*ZooKeeper, error) {
	var cfg zkConfig
	for _, o := range opts {
		o(&cfg)
	}
	if n < 1 || n > zkMaxServers {
		return nil, fmt.Errorf("rig: ZooKeeper ensemble of %d servers; want 1 to %d", n, zkMaxServers)
	}
	java, cp, err := ZooKeeperCommand()
	if err != nil {
		return nil, err
	}
	return startRetried("Address already in use", func() (*ZooKeeper, error) { return newZooKeeper(ctx, java, cp, n, cfg) })
}

func newZooKeeper(ctx context.Context, java, classpath string, n int, zc zkConfig) (*ZooKeeper, error) {
	dir, err := os.MkdirTemp("", "locklab-zookeeper-")
	if err != nil {
		return nil, fmt.Errorf("rig: %w", err)
	}
	z := &ZooKeeper{daemonGroup: daemonGroup{dir: dir}}
	var ensemble []string
	for i := range n {
		s := &ZKServer{id: i + 1}
		quorum, election := 0, 0
		if s.clientPort, err = freePort(); err == nil && n > 1 {
			if quorum, err = freePort(); err == nil {
				election, err = freePort()
			}
		}
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		if n > 1 {
			ensemble = append(ensemble, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", s.id, quorum, election))
		}
		z.servers = append(z.servers, s)
	}
	for _, s := range z.servers {
		sdir := filepath.Join(dir, "zk"+strconv.Itoa(s.id))
		data := filepath.Join(sdir, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("rig: %w", err)
		}
		cfg := []string{
			"tickTime=" + strconv.Itoa(int(zkTick.Milliseconds())),
			"initLimit=50", // ticks a follower may take to sync with a new leader: 10s
			"syncLimit=15", // ticks a follower may lag before it is dropped: 3s
			"dataDir=" + data,
			"clientPort=" + strconv.Itoa(s.clientPort),
			"clientPortAddress=127.0.0.1",
			"minSessionTimeout=" + strconv.Itoa(int(zkMinSession.Milliseconds())),
			"maxSessionTimeout=" + strconv.Itoa(int(zkMaxSession.Milliseconds())),
			"admin.enableServer=false",
			"4lw.commands.whitelist=ruok,srvr,stat,mntr,conf",
			"preAllocSize=1024", // KB per log file, not 64MB
		}
		if zc.noSync {
			cfg = append(cfg, "forceSync=no")
		}
		cfg = append(cfg, ensemble...)
		cfgPath := filepath.Join(sdir, "zoo.cfg")
		if err := os.WriteFile(cfgPath, []byte(strings.Join(cfg, "\n")+"\n"), 0o644); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("rig: %w", err)
		}
		if n > 1 {
			if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(s.id)+"\n"), 0o644); err != nil {
				_ = os.RemoveAll(dir)
				return nil, fmt.Errorf("rig: %w", err)
			}
		}
		s.d = &daemon{
			what:  fmt.Sprintf("ZooKeeper server %d (%s)", s.id, s.Addr()),
			path:  java,
			argv0: procMarker,
			args: append(append([]string{"-Xmx512m"}, zc.jvm...),
				"-Djava.net.preferIPv4Stack=true",
				"-Dorg.slf4j.simpleLogger.showDateTime=true",
				"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
				"-cp", sdir+":"+classpath,
				"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath,
			),
			dir:     sdir,
			logPath: filepath.Join(sdir, "zookeeper.log"),
		}
		z.add(s.d, s.Addr())
	}
	// Each server waits for its own readiness, all at once: in an
	// ensemble, none serves before a quorum is up.
	err = z.boot(
		func(i int) error { return z.daemons[i].start() },
		func() error {
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i, s := range z.servers {
				wg.Go(func() { errs[i] = s.d.waitReady(ctx, zkReadyTimeout, s.serving) })
			}
			wg.Wait()
			return errors.Join(errs...)
		},
	)
	if err != nil {
		return nil, err
	}
	return z, nil
}

// StartZooKeeper starts n servers for a test, as [NewZooKeeper] does, and
// closes them in tb.Cleanup. When the test fails, the tail of each
// server's log is logged. Without Java or ZooKeeper the test fails with
// [ZooKeeperInstallHint].
func StartZooKeeper(tb testing.TB, n int, opts ...ZooKeeperOption) *ZooKeeper {
	tb.Helper()
	return startForTest(tb, func() (*ZooKeeper, error) { return NewZooKeeper(context.Background(), n, opts...) })
}

// Servers returns the servers in the order of their ids (1, 2, ...).
func (z *ZooKeeper) Servers() []*ZKServer { return append([]*ZKServer(nil), z.servers...) }

// Addrs returns every server's client address, "127.0.0.1:port".
func (z *ZooKeeper) Addrs() []string { return z.clientAddrs() }

// Leader returns the server that reports itself leader (or standalone).
func (z *ZooKeeper) Leader(ctx context.Context) (*ZKServer, error) {
	var errs []error
	for _, s := range z.servers {
		if !s.d.running() || proc.State(s.d.pid()) == "T" {
			continue
		}
		mode, err := s.Mode(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if mode == "leader" || mode == "standalone" {
			return s, nil
		}
	}
	return nil, fmt.Errorf("rig: no ZooKeeper server reports itself leader: %w", errors.Join(errs...))
}

// Version returns the server version of the first server that answers.
func (z *ZooKeeper) Version(ctx context.Context) (string, error) {
	var errs []error
	for _, s := range z.servers {
		out, err := s.fourLetter(ctx, "srvr")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(l, "Zookeeper version: "); ok {
				v, _, _ = strings.Cut(v, "-")
				return strings.TrimSpace(v), nil
			}
		}
	}
	return "", errors.Join(errs...)
}

// Close kills every server, waits for them and removes the directory. It
// is safe to call more than once.
func (z *ZooKeeper) Close() error { return z.closeAll() }

// ID returns the server's id in the ensemble (its myid), from 1.
func (s *ZKServer) ID() int { return s.id }

// Addr returns the server's client address, "127.0.0.1:port".
func (s *ZKServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.clientPort)) }

// String returns the server's id and address.
func (s *ZKServer) String() string { return fmt.Sprintf("zk%d (%s)", s.id, s.Addr()) }

// Restart kills the server if it runs, starts it again with the same ports
// and data, and waits until it serves (in an ensemble, that needs a
// majority up).
func (s *ZKServer) Restart(ctx context.Context) error {
	return s.d.restart(ctx, s.d.start, zkReadyTimeout, s.serving)
}

// Mode returns what the server reports itself to be: "standalone",
// "leader" or "follower".
func (s *ZKServer) Mode(ctx context.Context) (string, error) {
	out, err := s.fourLetter(ctx, "srvr")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(l, "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("zk%d is not serving: %s", s.id, strings.TrimSpace(out))
}

// serving reports nil once the server serves clients: srvr names its mode
// (a server that has not joined a quorum says it is "not currently
// serving requests").
func (s *ZKServer) serving(ctx context.Context) error {
	_, err := s.Mode(ctx)
	return err
}

// fourLetter sends one of ZooKeeper's four-letter commands and returns the
// reply.
func (s *ZKServer) fourLetter(ctx context.Context, cmd string) (string, error) {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", s.Addr())
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", err
	}
	var b strings.Builder
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return b.String(), err
	}
	return b.String(), nil
}
