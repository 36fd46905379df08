package zklock

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
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

	mu        sync.Mutex
	connected bool          // the connection has a session
	lost      chan struct{} // closed when the connection or session is lost; a new one on reconnect
	changed   chan struct{} // closed and replaced on every state change
	closed    bool
	janitors  sync.WaitGroup // background deletions of children left by failed Locks
	paths     sync.Map       // persistent nodes known to exist: lock paths' ancestors
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
	close(s.lost) // not connected yet
	conn, _, err := zk.Connect(servers, timeout, zk.WithEventCallback(s.event), zk.WithLogger(quiet{}))
	if err != nil {
		return nil, fmt.Errorf("zklock: connect to %v: %w", servers, err)
	}
	s.conn = conn
	deadline := time.After(max(timeout, minConnectWait))
	for {
		ok, changed := s.state()
		if ok {
			return s, nil
		}
		select {
		case <-changed:
		case <-deadline:
			conn.Close()
			return nil, fmt.Errorf("zklock: no session with %v after %v", servers, timeout)
		}
	}
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
		if !s.connected {
			s.connected = true
			s.lost = make(chan struct{})
		}
	} else if s.connected {
		// Disconnected, Connecting, Expired, AuthFailed...: from now on
		// nobody can vouch for the children of this session.
		s.connected = false
		close(s.lost)
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Session) state() (bool, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connected && !s.closed, s.changed
}

// lostChan returns the channel that closes when the current connection is
// lost: the Done of a hold acquired now.
func (s *Session) lostChan() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
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

// waitConnected waits until the connection has a session again, the
// session is closed (false) or d passes (false).
func (s *Session) waitConnected(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		ok, changed := s.state()
		if ok {
			return true
		}
		if s.isClosed() {
			return false
		}
		select {
		case <-changed:
		case <-t.C:
			return false
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
// background, retrying while the session lives: a Lock that failed after
// its create may have landed must not leave the child at the head of the
// line. The goroutine ends once the child is gone (or never existed), or
// the session is closed or has expired.
func (s *Session) sweep(parent, tok string) {
	s.janitor(func() {
		id := s.conn.SessionID()
		for {
			err := deleteByToken(s.conn, parent, tok)
			if err == nil || errors.Is(err, zk.ErrClosing) || s.isClosed() {
				return
			}
			if !s.waitConnected(s.timeout) || s.conn.SessionID() != id {
				return // closed, or a new session: the old one's children are gone
			}
		}
	})
}

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
