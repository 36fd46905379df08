package zklock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/internal/retry"
)

// minConnectWait is the shortest time Connect waits for a session: a
// short session timeout should not make a slow first connection fail.
const minConnectWait = 10 * time.Second

// Session is one ZooKeeper session: a connection to one server of the
// ensemble at a time (the client moves to another when it loses one), kept
// alive by heartbeats, that owns the ephemeral children of every [Mutex]
// made on it. Make one per process with [Connect] and Close it at shutdown:
// closing it ends the session, which deletes its children, releasing every
// lock held on it.
//
// Its methods are safe for concurrent use.
type Session struct {
	conn    *zk.Conn
	timeout time.Duration

	mu         sync.Mutex
	connected  bool          // go-zookeeper's connection has a session
	sid        int64         // the session the connection has (while connected)
	connectSid int64         // the session named by the last connect response
	negotiated time.Duration // the session timeout the server granted
	acked      time.Time     // when the latest request the server answered was sent
	alive      bool          // connected, and acked less than 2/3 of negotiated ago
	lost       chan struct{} // closed when alive turns false; a new one when it turns true
	changed    chan struct{} // closed and replaced on every change of alive or connected
	timer      *time.Timer   // fires when acked grows too old
	closed     bool
	ctx        context.Context    // ends when the Session is closed: the janitors' context
	cancel     context.CancelFunc // ends ctx
	janitors   sync.WaitGroup     // background deletions of children left by failed Locks
	paths      sync.Map           // persistent nodes known to exist: lock paths' ancestors
}

// knows reports whether the persistent node p is known to exist.
func (s *Session) knows(p string) bool { _, ok := s.paths.Load(p); return ok }

// learn records that the persistent node p exists.
func (s *Session) learn(p string) { s.paths.Store(p, struct{}{}) }

// Connect opens a session on the ensemble at servers ("host:port") with
// the given session timeout, and waits until it is established (for the
// timeout, and at least 10s). ZooKeeper's servers bound the timeout they grant (by
// default between 2 and 20 of their ticks). If timeout is under 1ms the
// error wraps [ErrInvalid]. The caller must Close the Session.
func Connect(servers []string, timeout time.Duration) (*Session, error) {
	if len(servers) == 0 {
		return nil, fmt.Errorf("%w: no ZooKeeper server", ErrInvalid)
	}
	if timeout < time.Millisecond {
		return nil, fmt.Errorf("%w: session timeout %v: must be at least 1ms", ErrInvalid, timeout)
	}
	s := &Session{timeout: timeout, lost: make(chan struct{}), changed: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	close(s.lost) // not connected yet
	conn, _, err := zk.Connect(servers, timeout, zk.WithEventCallback(s.event), zk.WithLogger(quiet{}), zk.WithDialer(s.dial))
	if err != nil {
		s.cancel()
		return nil, fmt.Errorf("zklock: connect to %v: %w", servers, err)
	}
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), max(timeout, minConnectWait))
	defer cancel()
	if err := s.waitAlive(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("zklock: no session with %v after %v", servers, max(timeout, minConnectWait))
	}
	return s, nil
}

// event follows the connection's state. It runs in the client's goroutine
// and must not block.
func (s *Session) event(e zk.Event) {
	if e.Type != zk.EventSession {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.State == zk.StateHasSession {
		s.connected, s.sid = true, s.connectSid
	} else {
		// Disconnected, Connecting, Expired, AuthFailed...: from now on
		// nobody can vouch for the children of this session.
		s.connected = false
	}
	s.update()
	s.signal()
}

// sessionGranted records the server's answer to a connect request sent at
// sent: sid and timeout are what it granted, sid 0 if it refused the
// session. It runs in the client's goroutine.
func (s *Session) sessionGranted(sent time.Time, sid int64, timeout time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.connectSid = sid
	if sid == 0 {
		return // the session expired: its connect request proves nothing
	}
	if timeout > 0 {
		s.negotiated = timeout
	}
	s.ack(sent)
}

// answered records that the server answered a request sent at sent. It
// runs in the client's goroutine.
func (s *Session) answered(sent time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ack(sent)
}

// ack moves the latest answer to sent, if later, and rearms the timer
// that notices when it grows too old. s.mu must be held.
func (s *Session) ack(sent time.Time) {
	if sent.After(s.acked) {
		s.acked = sent
	}
	if s.negotiated > 0 && !s.closed {
		d := time.Until(s.acked.Add(s.negotiated * 2 / 3))
		if s.timer == nil {
			s.timer = time.AfterFunc(d, s.tick)
		} else {
			s.timer.Reset(d)
		}
	}
	s.update()
}

// tick runs when the latest answer has grown too old.
func (s *Session) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.update()
}

// update works out alive, closes lost when it turns false and makes a new
// one when it turns true, and tells the waiters. s.mu must be held.
//
// The connection is alive while it has a session and the server answered
// a request sent less than 2/3 of the negotiated timeout ago. The server
// expires a session no sooner than the timeout after the last request it
// received, which is after that request was sent: so alive turns false at
// least a third of the timeout before the server may end the session.
func (s *Session) update() {
	alive := s.connected && !s.closed && s.negotiated > 0 &&
		time.Since(s.acked) < s.negotiated*2/3
	if alive != s.alive {
		s.alive = alive
		if alive {
			s.lost = make(chan struct{})
		} else {
			close(s.lost)
		}
		s.signal()
	}
}

// signal wakes the waiters of the Session's state. s.mu must be held.
func (s *Session) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// grant returns the channel that closes when the connection stops being
// alive, if it is alive now and has the session owner: the Done of a hold
// granted now to a child of owner.
func (s *Session) grant(owner int64) (<-chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.update() // the timer may not have fired yet
	if !s.alive || s.sid != owner {
		return nil, false
	}
	return s.lost, true
}

// isAlive reports whether the connection is alive (see update).
func (s *Session) isAlive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.update()
	return s.alive
}

// current returns the session the connection has, and whether it is
// connected.
func (s *Session) current() (sid int64, connected bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sid, s.connected
}

// same reports whether the connection has the session owner now.
func (s *Session) same(owner int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connected && s.sid == owner
}

// Conn returns the session's go-zookeeper connection, for the writes a
// lock holder guards with [Mutex.IsOwner].
func (s *Session) Conn() *zk.Conn { return s.conn }

// ID returns the session's id as ZooKeeper knows it (0 before one is
// established or after it expired, until the client has a new one).
func (s *Session) ID() int64 { return s.conn.SessionID() }

// Timeout returns the session timeout asked for in [Connect].
func (s *Session) Timeout() time.Duration { return s.timeout }

// Close ends the session: ZooKeeper deletes its children, so every lock
// held on it is released at once, and waits for its background deletions
// to stop. It is safe to call more than once.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.cancel()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.update()
	s.signal()
	s.mu.Unlock()
	s.conn.Close()
	s.janitors.Wait()
}

// isClosed reports whether Close has been called.
func (s *Session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// errClosed is what the waits return once the Session is closed.
var errClosed = fmt.Errorf("%w: the session is closed", ErrSessionLost)

// waitConnected waits until the connection has a session, and returns
// nil; or ctx's error when ctx ends first, or an error wrapping
// [ErrSessionLost] when the Session is closed.
func (s *Session) waitConnected(ctx context.Context) error {
	return s.wait(ctx, func() bool { return s.connected })
}

// waitAlive waits, as waitConnected does, until the connection is alive
// (see update).
func (s *Session) waitAlive(ctx context.Context) error {
	return s.wait(ctx, func() bool { s.update(); return s.alive })
}

func (s *Session) wait(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ok, closed, changed := cond(), s.closed, s.changed
		s.mu.Unlock()
		switch {
		case closed:
			return errClosed
		case ok:
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// sweepAfter deletes, in the background, the child a create still in
// flight makes: once done yields the create's outcome, as sweep does.
func (s *Session) sweepAfter(done <-chan error, parent, tok string) {
	s.janitor(func() {
		<-done // the create's reply, or the connection's loss (within 2/3 of the timeout)
		s.sweep(parent, tok)
	})
}

// janitor runs f in a goroutine of its own, which Close waits for, unless
// the session is closed.
func (s *Session) janitor(f func()) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.janitors.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.janitors.Done()
		f()
	}()
}

// sweep deletes the child of parent whose name carries tok, in the
// background, retrying while the Session is open: a Lock that failed after
// its create may have landed must not leave the child at the head of the
// line. The goroutine ends once the child is gone (or never existed), or
// the Session is closed. It judges by the child alone: the child may have
// been created on a session that began after the Lock started.
func (s *Session) sweep(parent, tok string) {
	s.janitor(func() {
		_ = retry.Repeat(s.ctx, retry.Policy{Delay: sweepPause}, func(ctx context.Context, _ int) (bool, error) {
			err := deleteByToken(s.conn, parent, tok)
			if err == nil || errors.Is(err, zk.ErrClosing) {
				return true, nil
			}
			return false, s.waitConnected(ctx) // ends the sweep once the Session is closed
		})
	})
}

// sweepPause is the pause between a sweep's deletes, once the connection
// is back: 50ms doubling to 1s, so that a server that keeps refusing is
// not hammered.
var sweepPause = retry.Doubling(50*time.Millisecond, time.Second)

// deleteByToken deletes parent's child whose name carries tok, if any.
func deleteByToken(conn *zk.Conn, parent, tok string) error {
	name, err := findByToken(conn, parent, tok)
	if err != nil || name == "" {
		return err
	}
	if err := conn.Delete(parent+"/"+name, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

// findByToken returns the name of parent's child that carries tok, or ""
// when there is none.
func findByToken(conn *zk.Conn, parent, tok string) (string, error) {
	children, _, err := conn.Children(parent)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, c := range children {
		if t, _, ok := parseChild(c); ok && t == tok {
			return c, nil
		}
	}
	return "", nil
}

// quiet drops go-zookeeper's log lines ("connected to ...", "failed to
// connect ..."), which the labs provoke on purpose.
type quiet struct{}

func (quiet) Printf(string, ...any) {}
