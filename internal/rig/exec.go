package rig

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locklab/locklab/internal/proc"
)

// execProvider starts redis-server processes from a binary on this machine.
type execProvider struct{ bin string }

func (p execProvider) name() string { return "exec (" + p.bin + ")" }

func (p execProvider) start(ctx context.Context, cfg config, _ int) (*Node, error) {
	dir, err := os.MkdirTemp("", "locklab-redis-")
	if err != nil {
		return nil, fmt.Errorf("rig: %w", err)
	}
	s := &execServer{bin: p.bin, dir: dir, cfg: cfg}
	if wantsBusPort(cfg.args) {
		// A cluster node's bus listens on port+10000 unless told otherwise,
		// which fails for ports above 55535: give it a port of its own.
		if s.busPort, err = freePort(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	err = onFreePort(addrInUse, func() error {
		var err error
		if s.port, err = freePort(); err != nil {
			return err
		}
		return s.start(ctx)
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &Node{addr: s.addr(), ctl: s}, nil
}

var errAddrInUse = errors.New("address already in use")

// addrInUse reports whether err says a server could not bind its port.
func addrInUse(err error) bool { return errors.Is(err, errAddrInUse) }

// startTries is how many times [onFreePort] calls a start at most.
const startTries = 5

// onFreePort calls start, and again while it fails with an error that
// taken says means a port it chose was taken meanwhile: a free port found
// by binding :0 may be taken before the server binds it (another
// package's test binary runs in parallel). It returns start's last error.
func onFreePort(taken func(error) bool, start func() error) error {
	for attempt := 1; ; attempt++ {
		err := start()
		if err == nil || attempt == startTries || !taken(err) {
			return err
		}
	}
}

// execServer is one redis-server process and its directory.
type execServer struct {
	bin     string
	dir     string
	port    int
	busPort int // cluster bus port when cluster mode is on and none was given
	cfg     config
	d       daemon // the process; start sets what it runs
}

func (s *execServer) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

func (s *execServer) logPath() string { return filepath.Join(s.dir, "redis.log") }

func (s *execServer) args() []string {
	a := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
	}
	a = append(a, s.cfg.serverArgs()...)
	a = append(a,
		"--enable-debug-command", "local",
		"--daemonize", "no",
		"--logfile", "",
		"--proc-title-template", procMarker+" {listen-addr} {server-mode}",
	)
	if s.busPort != 0 {
		a = append(a, "--cluster-port", strconv.Itoa(s.busPort))
	}
	return append(a, s.cfg.args...)
}

// wantsBusPort reports whether args turn cluster mode on without naming a
// bus port.
func wantsBusPort(args []string) bool {
	enabled := false
	for i, a := range args {
		if a == "--cluster-port" {
			return false
		}
		if a == "--cluster-enabled" && i+1 < len(args) && args[i+1] == "yes" {
			enabled = true
		}
	}
	return enabled
}

// serverPid asks the server at addr for its process id (INFO server).
func serverPid(addr string) (int, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("INFO server\r\n")); err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n') // $<len>
	if err != nil || !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("rig: INFO server: unexpected reply %q (%v)", head, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil {
		return 0, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("rig: INFO server has no process_id")
}

// start runs the server and waits until PING answers, from this process.
func (s *execServer) start(ctx context.Context) error {
	s.d.what, s.d.redis = fmt.Sprintf("redis-server on port %d", s.port), true
	s.d.path, s.d.args, s.d.dir, s.d.logPath = s.bin, s.args(), s.dir, s.logPath()
	if err := s.d.start(); err != nil {
		return err
	}
	cmd, _ := s.d.current()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.readyTimeout)
	defer cancel()
	err := s.d.waitPing(ctx, s.addr(), func(context.Context) error {
		// Whoever answers must be the process we started: another test
		// binary's server may have bound the port first.
		pid, err := serverPid(s.addr())
		if err == nil && pid != cmd.Process.Pid {
			return fmt.Errorf("rig: port %d answered by pid %d, not ours (%d): %w", s.port, pid, cmd.Process.Pid, errAddrInUse)
		}
		return err
	})
	if err != nil {
		_ = s.kill()
	}
	return err
}

func (s *execServer) pid() int    { return s.d.pid() }
func (s *execServer) kill() error { return s.d.kill() }

// stop sends SIGTERM to the server's process group and waits up to 10s,
// then kills it.
func (s *execServer) stop() error {
	cmd, exited := s.d.current()
	if cmd == nil || !s.d.running() {
		return nil
	}
	_ = proc.Signal(cmd, syscall.SIGCONT)
	if err := proc.Signal(cmd, syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-exited:
		return nil
	case <-time.After(10 * time.Second):
		_ = s.kill()
		return fmt.Errorf("rig: redis-server on port %d ignored SIGTERM for 10s; killed", s.port)
	}
}

func (s *execServer) pause() error  { return s.d.pause() }
func (s *execServer) resume() error { return s.d.resume() }

func (s *execServer) restart(ctx context.Context, keepData bool) error {
	if err := s.kill(); err != nil {
		return err
	}
	if !keepData {
		entries, err := os.ReadDir(s.dir)
		if err != nil {
			return fmt.Errorf("rig: %w", err)
		}
		for _, e := range entries {
			if e.Name() == "redis.log" {
				continue
			}
			if err := os.RemoveAll(filepath.Join(s.dir, e.Name())); err != nil {
				return fmt.Errorf("rig: %w", err)
			}
		}
	}
	// The port was ours a moment ago; another process may grab it in
	// between, which we can only report.
	return retryTaken(ctx, s.start, func(err error) bool { return errors.Is(err, errAddrInUse) })
}

// retryTaken calls start until it returns an error that taken does not
// count as "the port is taken", up to 20 times 50ms apart: a server
// restarted on its port may find it held a moment longer (by the process
// or container just removed, or by another process that grabbed it).
func retryTaken(ctx context.Context, start func(context.Context) error, taken func(error) bool) error {
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if err = start(ctx); err == nil || !taken(err) {
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

func (s *execServer) close() error {
	_ = s.d.kill()
	return os.RemoveAll(s.dir)
}

func (s *execServer) logTail(lines int) string { return s.d.logTail(lines) }

func tail(b []byte, lines int) string {
	b = bytes.TrimRight(b, "\n")
	i := len(b)
	for n := 0; n < lines && i > 0; n++ {
		i = bytes.LastIndexByte(b[:i], '\n')
		if i < 0 {
			i = 0
			break
		}
	}
	if i > 0 {
		i++
	}
	return string(b[i:])
}

// handedOut holds the ports this process has given to a server, so two
// servers started at the same moment never get the same port (binding :0
// and closing can return the same port twice before either server binds it).
var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

// freePort returns a loopback port that was free a moment ago and has not
// been handed out by this process, never one of Redis's well-known ports.
// Another process may still take it first; start checks the server that
// answers is ours.
func freePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("rig: find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port != 6379 && port != 26379 && !handedOut[port] {
			handedOut[port] = true
			return port, nil
		}
	}
}
