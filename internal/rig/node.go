package rig

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoControl is returned by a control method of a node whose provider
// cannot control processes (external servers).
var ErrNoControl = errors.New("rig: provider has no process control")

// Node is one Redis server. Its methods are safe for concurrent use.
type Node struct {
	addr string
	ctl  controller // nil when the provider has no process control

	clients clientSet // made by Client, closed by Close
}

// clientSet holds the clients a [Node] or [Cluster] made for its callers,
// to close them with it.
type clientSet struct {
	mu      sync.Mutex // protects clients and closed
	clients []io.Closer
	closed  bool
}

// add keeps c, to be closed by close, or closes it at once if close has
// run already.
func (s *clientSet) add(c io.Closer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return
	}
	s.clients = append(s.clients, c)
}

// close closes every client kept; it reports false when close had run
// already.
func (s *clientSet) close() bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.closed = true
	clients := s.clients
	s.clients = nil
	s.mu.Unlock()
	for _, c := range clients {
		_ = c.Close()
	}
	return true
}

// controller is what a provider that owns the process implements.
type controller interface {
	kill() error
	stop() error
	pause() error
	resume() error
	restart(ctx context.Context, keepData bool) error
	close() error
	logTail(lines int) string
	pid() int
}

// Addr returns the node's "127.0.0.1:port" address.
func (n *Node) Addr() string { return n.addr }

// String returns the address.
func (n *Node) String() string { return n.addr }

// Client returns a new go-redis client for the node, closed by [Node.Close].
// It never retries a command by itself (MaxRetries -1), so a lab sees every
// network error, and it honours context deadlines. opts, when given, adjust
// the defaults before the client is made.
func (n *Node) Client(opts ...func(*redis.Options)) *redis.Client {
	o := ClientOptions(n.addr)
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	n.clients.add(c)
	return c
}

// ClientOptions returns the options [Node.Client] starts from: dial, read
// and write timeouts of 2s, no automatic retries (of commands or dials),
// context timeouts on, no CLIENT SETINFO on connect.
func ClientOptions(addr string) *redis.Options { return clientDefaults(addr).Simple() }

// UniversalOptions returns the settings of [ClientOptions] for addrs, as
// go-redis's universal options: .Cluster() for a Redis Cluster seeded with
// addrs, or, with MasterName set, .Failover() for a Sentinel group's
// primary reached through the sentinels at addrs.
func UniversalOptions(addrs ...string) *redis.UniversalOptions { return clientDefaults(addrs...) }

// clientDefaults are the settings of every client the rig makes, for one
// node ([ClientOptions]) or for a cluster ([Cluster.Client]): go-redis
// turns them into either kind of options.
func clientDefaults(addrs ...string) *redis.UniversalOptions {
	return &redis.UniversalOptions{
		Addrs:                 addrs,
		DialTimeout:           defaultClientTimeout,
		ReadTimeout:           defaultClientTimeout,
		WriteTimeout:          defaultClientTimeout,
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
		DisableIdentity:       true,
		DialerRetries:         1, // a refused dial fails at once, not after 5x100ms
	}
}

// UserOptions returns go-redis's own defaults for addr, as users run it:
// a command that fails with a network error (a lost reply, a reset) or a
// read timeout is sent again, up to 3 times, on a new connection; read and
// write timeouts are 3s and context deadlines do not bound a command's
// socket wait. A lock must stay safe, and its scripts give the same answer,
// when its commands are sent twice.
func UserOptions(addr string) *redis.Options {
	return &redis.Options{Addr: addr}
}

// OnCommand calls seen with the name of every command c sends from now on
// ("set", "evalsha", ...), each command of a pipeline too, in the
// goroutine that sends it, before it is sent: how tests and the bench
// count what a lock costs. seen must be safe for concurrent use if c is
// used from several goroutines.
// c is a *redis.Client or any other go-redis client (a ClusterClient
// counts every command once, whichever node it goes to).
func OnCommand(c interface{ AddHook(redis.Hook) }, seen func(name string)) {
	c.AddHook(commandHook(seen))
}

type commandHook func(name string)

func (commandHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h commandHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h(cmd.Name())
		return next(ctx, cmd)
	}
}

func (h commandHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h(cmd.Name())
		}
		return next(ctx, cmds)
	}
}

// UserClient returns a go-redis client for the node on go-redis's default
// options ([UserOptions]), closed by [Node.Close].
func (n *Node) UserClient() *redis.Client {
	return n.Client(func(o *redis.Options) { *o = *UserOptions(o.Addr) })
}

// withControl runs f on the node's process control, or fails with an
// error wrapping [ErrNoControl] when its provider has none.
func (n *Node) withControl(f func(c controller) error) error {
	if n.ctl == nil {
		return fmt.Errorf("%s: %w", n.addr, ErrNoControl)
	}
	return f(n.ctl)
}

// Kill sends SIGKILL to the server and waits for it to exit. Data not on
// disk is lost.
func (n *Node) Kill() error {
	return n.withControl(controller.kill)
}

// Stop shuts the server down gracefully (SIGTERM) and waits for it to exit.
func (n *Node) Stop() error {
	return n.withControl(controller.stop)
}

// Pause freezes the server with SIGSTOP and returns once the kernel reports
// it stopped. The wall clock keeps running, so keys expire meanwhile.
func (n *Node) Pause() error {
	return n.withControl(controller.pause)
}

// Resume continues a paused server with SIGCONT.
func (n *Node) Resume() error {
	return n.withControl(controller.resume)
}

// Restart kills the server if it runs and starts it again on the same port.
// With keepData the directory (AOF files) is kept, so what was fsynced comes
// back; without it the server starts empty. Existing clients reconnect on
// their next command.
func (n *Node) Restart(ctx context.Context, keepData bool) error {
	return n.withControl(func(c controller) error { return c.restart(ctx, keepData) })
}

// Pid returns the server's process id, or 0 when it is not running or the
// provider has no process control.
func (n *Node) Pid() int {
	if n.ctl == nil {
		return 0
	}
	return n.ctl.pid()
}

// LogTail returns the last lines of the server's log, or "" when the
// provider keeps no log.
func (n *Node) LogTail(lines int) string {
	if n.ctl == nil {
		return ""
	}
	return n.ctl.logTail(lines)
}

// Close closes the node's clients, then kills the server (SIGCONT first, so
// a paused one dies too), waits for it and removes its directory. It is
// safe to call more than once.
func (n *Node) Close() error {
	if !n.clients.close() || n.ctl == nil {
		return nil
	}
	return n.ctl.close()
}

// Ping reports whether the server answers PING with PONG within d. It
// speaks RESP over a raw connection, so a refused dial leaves no go-redis
// pool goroutine behind, and a server still loading its data (-LOADING)
// does not count as ready.
func (n *Node) Ping(d time.Duration) error {
	conn, err := net.DialTimeout("tcp", n.addr, d)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(d))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("rig: %s answered PING with %q", n.addr, strings.TrimSpace(line))
	}
	return nil
}

func probeOptions(addr string, d time.Duration) *redis.Options {
	o := ClientOptions(addr)
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = d, d, d
	o.PoolSize = 1
	return o
}

// quietLogger drops go-redis's internal log lines ("failed to dial after 1
// attempts"), which labs provoke on purpose by killing servers.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quietLogger{}) }
