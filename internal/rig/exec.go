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
	"os/exec"
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
	// A free port found by binding :0 may be taken before redis-server binds
	// it (another package's test binary runs in parallel); try a few.
	for attempt := 0; ; attempt++ {
		s.port, err = freePort()
		if err == nil {
			err = s.start(ctx)
		}
		if err == nil {
			return &Node{addr: s.addr(), ctl: s}, nil
		}
		if attempt == 4 || !errors.Is(err, errAddrInUse) {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
}

var errAddrInUse = errors.New("address already in use")

// execServer is one redis-server process and its directory.
type execServer struct {
	bin     string
	dir     string
	port    int
	busPort int // cluster bus port when cluster mode is on and none was given
	cfg     config

	mu     sync.Mutex // protects cmd and exited
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

func (s *execServer) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

func (s *execServer) logPath() string { return filepath.Join(s.dir, "redis.log") }

func (s *execServer) args() []string {
	aof := "no"
	if s.cfg.aof {
		aof = "yes"
	}
	a := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--appendonly", aof,
		"--appendfsync", "always",
		"--enable-debug-command", "local",
		"--daemonize", "no",
		"--repl-diskless-sync-delay", "0", // replicas sync at once, not after 5s
		"--logfile", "",
		"--proc-title-template", procMarker + " {listen-addr} {server-mode}",
	}
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
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("rig: %w", err)
	}
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := proc.Start(cmd); err != nil {
		logf.Close()
		return fmt.Errorf("rig: start %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, s.cfg.readyTimeout)
	defer cancel()
	node := &Node{addr: s.addr()}
	for {
		select {
		case <-exited:
			tail := s.logTail(20)
			if strings.Contains(tail, "Address already in use") {
				return fmt.Errorf("rig: port %d: %w", s.port, errAddrInUse)
			}
			return fmt.Errorf("rig: redis-server on port %d exited at start; log:\n%s", s.port, tail)
		default:
		}
		if node.Ping(200*time.Millisecond) == nil {
			// Whoever answers must be the process we started: another test
			// binary's server may have bound the port first.
			pid, err := serverPid(s.addr())
			if err == nil && pid == cmd.Process.Pid {
				return nil
			}
			if err == nil {
				_ = s.kill()
				return fmt.Errorf("rig: port %d answered by pid %d, not ours (%d): %w", s.port, pid, cmd.Process.Pid, errAddrInUse)
			}
		}
		select {
		case <-ctx.Done():
			_ = s.kill()
			return fmt.Errorf("rig: redis-server on port %d not ready after %v: %w; log:\n%s",
				s.port, s.cfg.readyTimeout, ctx.Err(), s.logTail(20))
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (s *execServer) current() (*exec.Cmd, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd, s.exited
}

func (s *execServer) running() bool {
	cmd, exited := s.current()
	if cmd == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

func (s *execServer) pid() int {
	if !s.running() {
		return 0
	}
	cmd, _ := s.current()
	return cmd.Process.Pid
}

func (s *execServer) kill() error {
	cmd, exited := s.current()
	if cmd == nil {
		return nil
	}
	_ = proc.Signal(cmd, syscall.SIGKILL)
	<-exited
	return nil
}

func (s *execServer) stop() error {
	cmd, exited := s.current()
	if cmd == nil || !s.running() {
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

func (s *execServer) pause() error {
	cmd, _ := s.current()
	if !s.running() {
		return fmt.Errorf("rig: pause: redis-server on port %d is not running", s.port)
	}
	if err := proc.Signal(cmd, syscall.SIGSTOP); err != nil {
		return err
	}
	return proc.WaitState(cmd.Process.Pid, "T", 5*time.Second)
}

func (s *execServer) resume() error {
	cmd, _ := s.current()
	if !s.running() {
		return fmt.Errorf("rig: resume: redis-server on port %d is not running", s.port)
	}
	return proc.Signal(cmd, syscall.SIGCONT)
}

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
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if err = s.start(ctx); !errors.Is(err, errAddrInUse) {
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
	cmd, exited := s.current()
	if cmd != nil {
		_ = proc.Signal(cmd, syscall.SIGCONT)
		_ = proc.Signal(cmd, syscall.SIGKILL)
		<-exited
	}
	return os.RemoveAll(s.dir)
}

func (s *execServer) logTail(lines int) string {
	b, err := os.ReadFile(s.logPath())
	if err != nil {
		return ""
	}
	return tail(b, lines)
}

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
