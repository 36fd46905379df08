package zklock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/internal/frame"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/observe"
)

const (
	// childPrefix starts every child's name: lock-<token>-<sequence>.
	childPrefix = "lock-"
	// seqDigits is how many digits ZooKeeper appends to a sequential node.
	seqDigits = 10
	// maxPath is the longest lock path New accepts, in bytes. ZooKeeper's
	// server drops the connection of a client whose request is larger
	// than its jute.maxbuffer (1 MiB by default), which would end the
	// connection under every lock of the Session; 4 KiB keeps every
	// request of the package far below that.
	maxPath = 4096
)

// acl is what every node the package creates allows: anything, to anyone.
var acl = zk.WorldACL(zk.PermAll)

// Mutex is a lock on one ZooKeeper path. It is not reentrant: see
// [Mutex.Lock].
//
// A Mutex must be made by [New]; the zero value is not usable (its methods
// return an error wrapping [ErrInvalid]). A Mutex must not be copied after
// first use. Its methods are safe for concurrent use; like a sync.Mutex it
// is one holder, so any goroutine may Unlock what another locked. Give each
// party that must exclude the others its own Mutex on the same path.
type Mutex struct {
	s    *Session
	path string // the lock's node; its children are the claims

	// The fields above, and f's but Cur, are set by New and never change.

	f       frame.Holding[hold] // the argument error, the hook, the observer and the current hold
	mu      sync.Mutex          // protects parents
	parents bool                // the lock's node and its ancestors exist
}

// hold is one acquisition.
type hold struct {
	node  string // full path of the child
	seq   int64
	czxid int64
	owner int64 // the session that owns the child (its ephemeralOwner)
	lost  <-chan struct{}

	mu      sync.Mutex // serializes the Unlocks of this hold; protects deleted
	deleted bool       // a delete of the child has been sent
}

// New returns a Mutex for the lock at path, an absolute ZooKeeper path
// such as "/locks/order-1001", using s. It sends nothing to ZooKeeper;
// Lock creates the path if it does not exist: its parents as persistent
// nodes, the lock's node as a container that ZooKeeper deletes once it is
// empty. New never fails: if s is nil or path is not a valid
// ZooKeeper path, every method of the returned Mutex reports it with an
// error wrapping [ErrInvalid].
func New(s *Session, path string, opts ...Option) *Mutex {
	o, err := newOptions(opts)
	if err == nil && s == nil {
		err = args.Invalid(ErrInvalid, "nil session")
	}
	if err == nil {
		err = checkPath(path)
	}
	return &Mutex{
		s:    s,
		path: path,
		f:    frame.Holding[hold]{Frame: frame.Frame{Kind: "zklock", Key: path, Err: err, Hook: o.hook, Obs: o.observer}},
	}
}

// checkPath reports whether path is an absolute ZooKeeper path that a
// client may create nodes under.
func checkPath(path string) error {
	bad := func(why string) error { return args.Invalid(ErrInvalid, "path %q: %s", path, why) }
	switch {
	case len(path) > maxPath:
		return args.Invalid(ErrInvalid, "path of %d bytes: longer than %d", len(path), maxPath)
	case path == "":
		return bad("empty")
	case path[0] != '/':
		return bad("must start with /")
	case path == "/":
		return bad("the root cannot be a lock")
	case strings.HasSuffix(path, "/"):
		return bad("must not end with /")
	case path == "/zookeeper" || strings.HasPrefix(path, "/zookeeper/"):
		return bad("/zookeeper is reserved")
	}
	for _, part := range strings.Split(path[1:], "/") {
		if part == "" || part == "." || part == ".." {
			return bad("empty, . or .. component")
		}
		if strings.ContainsRune(part, 0) {
			return bad("contains NUL")
		}
	}
	return nil
}

// Lock acquires the lock, waiting in line while others hold it or are
// ahead of this Mutex. It returns nil once the lock is held;
// errors.Join(ErrNotObtained, ctx.Err()) when ctx ended first, without
// touching ZooKeeper if ctx had already ended; an error wrapping
// [ErrSessionLost] if the session ended while it waited; and a wrapped
// error, at once, if ZooKeeper answers with an error. Every wait of Lock
// ends with ctx: it waits for a dropped connection to come back only as
// long as ctx allows. When Lock fails it deletes its child, so it never
// leaves one others would queue behind: at once, within 2s, while the
// connection is alive, and otherwise in the background, so that Lock
// returns as soon as ctx ends. When it returns nil the hold's [Mutex.Done] is open.
//
// Lock is not reentrant. Locking a Mutex that already holds the lock
// queues a second child behind the first: it waits until the lock is
// unlocked (by another goroutine), the session ends, or ctx ends.
func (m *Mutex) Lock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	start := time.Now()
	_, err := m.acquire(ctx, inLine)
	m.f.Attempted(start, err == nil, err)
	return err
}

// TryLock makes one attempt to acquire the lock: it creates its child and
// holds the lock if no older child exists. It returns (true, nil) if it got
// the lock and (false, nil), having deleted its child, if another child is
// older. Errors are as for [Mutex.Lock].
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if err := m.check(); err != nil {
		return false, err
	}
	start := time.Now()
	ok, err := m.acquire(ctx, once)
	m.f.Attempted(start, ok, err)
	return ok, err
}

// queueing is what acquire does when older children hold the lock.
type queueing int

const (
	once   queueing = iota // delete the child and report the lock taken (TryLock)
	inLine                 // wait for the child's turn (Lock)
)

// acquire creates a child and, in line, waits for its turn.
func (m *Mutex) acquire(ctx context.Context, how queueing) (bool, error) {
	if err := retry.CtxErr(ctx); err != nil {
		return false, errors.Join(ErrNotObtained, err)
	}
	if m.s.isClosed() {
		return false, fmt.Errorf("zklock: lock %q: %w", m.path, errClosed)
	}
	if err := m.ensureParents(ctx); err != nil {
		return false, m.failed(ctx, err)
	}
	tok := token.New()
	name, err := m.create(ctx, tok)
	if err != nil {
		return false, m.abandon(ctx, tok, err)
	}
	_, seq, _ := parseChild(name)
	node := m.path + "/" + name

	for {
		children, err := read(ctx, m.s, func() ([]string, error) {
			c, _, err := m.s.conn.Children(m.path)
			return c, err
		})
		if err != nil {
			return false, m.abandon(ctx, tok, fmt.Errorf("zklock: list %q: %w", m.path, err))
		}
		ahead := predecessor(children, seq)
		if !slices.Contains(children, name) {
			return false, m.abandon(ctx, tok, fmt.Errorf("zklock: lock %q: %w: its child %s is gone", m.path, ErrSessionLost, name))
		}
		if ahead == "" {
			break // the oldest child: the lock is ours
		}
		if how == once {
			return false, m.abandon(ctx, tok, nil)
		}
		m.f.At(ctx, HookClaimed)
		if err := m.waitGone(ctx, m.path+"/"+ahead); err != nil {
			return false, m.abandon(ctx, tok, err)
		}
	}

	// Read the child's czxid, the fencing token, and its owner, and check
	// that it still exists (its session did not end meanwhile). The hold's
	// Done is the connection's from this moment: a Lock never returns a
	// hold that is already lost, nor one whose child belongs to a session
	// the connection no longer has.
	var h *hold
	err = retry.Repeat(ctx, retry.Policy{Delay: atOnce}, func(ctx context.Context, _ int) (bool, error) {
		stat, err := read(ctx, m.s, func() (*zk.Stat, error) {
			ok, st, err := m.s.conn.Exists(node)
			if err == nil && !ok {
				err = fmt.Errorf("%w: its child %s is gone", ErrSessionLost, name)
			}
			return st, err
		})
		if err != nil {
			return false, fmt.Errorf("zklock: lock %q: %w", m.path, err)
		}
		if lost, ok := m.s.grant(stat.EphemeralOwner); ok {
			h = &hold{node: node, seq: seq, czxid: stat.Czxid, owner: stat.EphemeralOwner, lost: lost}
			return true, nil
		}
		if sid, connected := m.s.current(); !connected || sid == stat.EphemeralOwner {
			// Not connected, or connected with the child's session but
			// with no recent answer: wait until the connection is alive,
			// then look again.
			return false, m.s.waitAlive(ctx)
		}
		// Connected with another session: the child's has ended.
		return false, fmt.Errorf("zklock: lock %q: %w: its child %s belongs to an ended session", m.path, ErrSessionLost, name)
	})
	if err != nil {
		return false, m.abandon(ctx, tok, err)
	}
	m.f.Cur.Set(h)
	m.f.At(ctx, HookAcquired)
	return true, nil
}

// ensureParents creates the lock's node, once per Mutex, and its
// ancestors, once per Session. The ancestors are persistent nodes; the
// lock's node is a container, which ZooKeeper deletes once it has been
// used and is empty again (its check runs every minute by default), so
// lock paths do not pile up. A create that finds the node already there is
// fine; one that finds the lock's node gone later is handled by create.
func (m *Mutex) ensureParents(ctx context.Context) error {
	m.mu.Lock()
	done := m.parents
	m.mu.Unlock()
	if done {
		return nil
	}
	parts := strings.Split(m.path[1:], "/")
	for i := range parts {
		p := "/" + strings.Join(parts[:i+1], "/")
		last := i == len(parts)-1
		if !last && m.s.knows(p) {
			continue
		}
		_, err := read(ctx, m.s, func() (string, error) {
			if last {
				return m.s.conn.CreateContainer(p, nil, zk.FlagContainer, acl)
			}
			return m.s.conn.Create(p, nil, 0, acl)
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zklock: create %q: %w", p, err)
		}
		if !last {
			m.s.learn(p)
		}
	}
	m.mu.Lock()
	m.parents = true
	m.mu.Unlock()
	return nil
}

// create creates the Mutex's ephemeral sequential child with tok in its
// name and returns the name. When the reply is lost (the connection
// dropped), it waits for the connection (as long as ctx allows) and looks
// for a child with tok: if the create landed, that is ours; if not, it
// sends the create again. If the lock's node has been deleted meanwhile, it
// is made again. When ctx ends while the create is in flight, the create
// may still land after create has returned: the session deletes that
// child once the create's reply (or its loss) is known.
func (m *Mutex) create(ctx context.Context, tok string) (string, error) {
	var name string
	err := retry.Repeat(ctx, retry.Policy{Delay: atOnce}, func(ctx context.Context, n int) (bool, error) {
		var err error
		name, err = m.createOnce(ctx, tok)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, zk.ErrNoNode) && n == 1:
			// The lock's node was deleted (an empty container): make it
			// again, and send the create again.
			m.mu.Lock()
			m.parents = false
			m.mu.Unlock()
			return false, m.ensureParents(ctx)
		case transient(err) && n <= maxCreates:
			if werr := m.s.waitConnected(ctx); werr != nil {
				return false, werr
			}
			name, err = call(ctx, func() (string, error) { return findByToken(m.s.conn, m.path, tok) })
			if err == nil {
				return name != "", nil // it landed; or it never reached the server: send it again
			}
		case errors.Is(err, errInFlight):
			return false, ctx.Err()
		}
		return false, fmt.Errorf("zklock: create a child of %q: %w", m.path, err)
	})
	return name, err
}

// createOnce sends the create of create's child with tok in its name and
// returns the child's name. When ctx ends first it returns errInFlight
// and leaves the child, if the create lands, to the Session's janitor.
func (m *Mutex) createOnce(ctx context.Context, tok string) (string, error) {
	done := make(chan error, 1)
	var p string
	go func() {
		var err error
		p, err = m.s.conn.Create(m.path+"/"+childPrefix+tok+"-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return "", err
		}
		return p[len(m.path)+1:], nil
	case <-ctx.Done():
		m.s.sweepAfter(done, m.path, tok)
		return "", errInFlight
	}
}

// errInFlight is createOnce's report of a create whose context ended
// before its reply came.
var errInFlight = errors.New("zklock: create still in flight when the context ended")

// maxCreates bounds how many times create sends its create again after
// the connection dropped under it.
const maxCreates = 3

// atOnce is the pause between two sends of a request that went
// unanswered because the connection dropped under it: none, since the
// sender first waits until the connection is back (the Session's
// waitConnected paces it).
func atOnce(int) time.Duration { return 0 }

// transient reports whether err is go-zookeeper's report of a connection
// that dropped (the request may or may not have reached the server) or of
// a request it never sent: the session may live on.
func transient(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer)
}

// read runs f, a request that is safe to send again (a read, or a create
// that accepts ErrNodeExists), as call does, and sends it again, once the
// connection has a session, when the connection dropped under it; up to
// maxReads times in all, so that a request the server refuses by dropping
// the connection is not sent for ever.
func read[T any](ctx context.Context, s *Session, f func() (T, error)) (T, error) {
	var v T
	var err error
	rerr := retry.Repeat(ctx, retry.Policy{Delay: atOnce, Tries: maxReads}, func(ctx context.Context, n int) (bool, error) {
		if n > 1 {
			if werr := s.waitConnected(ctx); werr != nil {
				return false, werr
			}
		}
		v, err = call(ctx, f)
		return err == nil || !transient(err), nil
	})
	if rerr != nil && !errors.Is(rerr, retry.ErrExhausted) {
		return v, rerr // ctx ended, or the Session was closed, while it waited
	}
	return v, err
}

// maxReads bounds how many times read sends one request.
const maxReads = 5

// waitGone waits until node no longer exists.
func (m *Mutex) waitGone(ctx context.Context, node string) error {
	type watch struct {
		ok bool
		ch <-chan zk.Event
	}
	w, err := read(ctx, m.s, func() (watch, error) {
		ok, _, ch, err := m.s.conn.ExistsW(node)
		return watch{ok, ch}, err
	})
	if err != nil {
		return fmt.Errorf("zklock: watch %q: %w", node, err)
	}
	if !w.ok {
		return nil
	}
	select {
	case e := <-w.ch:
		if e.Type == zk.EventNotWatching {
			return fmt.Errorf("zklock: lock %q: %w: %v", m.path, ErrSessionLost, e.Err)
		}
		return nil // deleted, or changed: look again
	case <-ctx.Done():
		return ctx.Err()
	}
}

// abandon deletes the child with tok after a failure and returns the
// error Lock reports: ErrNotObtained joined with ctx's error if ctx ended,
// err otherwise (nil for a TryLock that found the lock taken). The delete
// runs at once, within its own bound of 2s, while the connection is
// alive; otherwise, or when it fails, the Session retries it in the
// background until the child is gone or the Session is closed, so Lock
// returns as soon as its ctx ends.
func (m *Mutex) abandon(ctx context.Context, tok string, err error) error {
	derr := errors.New("not connected")
	if m.s.isAlive() {
		dctx, cancel := retry.Detach(ctx)
		_, derr = call(dctx, func() (struct{}, error) { return struct{}{}, deleteByToken(m.s.conn, m.path, tok) })
		cancel()
	}
	if derr != nil {
		m.s.sweep(m.path, tok)
	}
	return m.failed(ctx, err)
}

// failed returns ErrNotObtained joined with ctx's error if ctx ended
// (its deadline passed counts, as in every lock: see retry.CtxErr), and err
// otherwise.
func (m *Mutex) failed(ctx context.Context, err error) error {
	return retry.Failed(ctx, ErrNotObtained, err)
}

// Unlock releases the lock if this Mutex still holds it: it deletes its
// child, whose name is unique to this acquisition, so it can only remove
// its own. It returns nil once the child is deleted, and [ErrNotHeld] if
// the lock was never acquired, was already released, or the child is gone
// (its session expired while it held the lock: the server says so once
// the client has reconnected, and until then Unlock fails with a
// transport error). Unlock always asks the server: it never infers from
// the session that the child is gone.
//
// Unlock ignores the cancellation and deadline of ctx (it keeps its
// values) and bounds the delete by its own timeout of 2s; when the
// connection drops under the delete it waits for it (within that bound)
// and sends the delete again. On a transport error the outcome is unknown:
// the Session goes on deleting the child in the background until it is
// gone (or the Session is closed), so a lock whose Unlock gave up is freed
// once ZooKeeper answers again, not when the session ends; the Mutex keeps
// the hold and Unlock may be called again: it then reports nil if a delete
// of this hold landed while the session lived on.
// Closing the Session releases every lock held on it: an Unlock after
// Close (or during it) returns an error wrapping ErrNotHeld.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	h, err := m.f.Releasing(ctx, ErrNotHeld, HookBeforeRelease)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if m.f.Cur.Get() != h {
		return ErrNotHeld // a concurrent Unlock released it
	}
	if m.s.isClosed() {
		return m.f.Ended(h, observe.Lost, errReleasedByClose)
	}
	dctx, cancel := retry.Detach(ctx)
	defer cancel()
	earlier := false // a delete of this hold was sent before the current one
	err = retry.Repeat(dctx, retry.Policy{Delay: atOnce}, func(ctx context.Context, _ int) (bool, error) {
		earlier, h.deleted = h.deleted, true
		_, err := call(ctx, func() (struct{}, error) { return struct{}{}, m.s.conn.Delete(h.node, -1) })
		if transient(err) && m.s.waitConnected(ctx) == nil {
			return false, nil // the connection is back: send it again
		}
		return true, err
	})
	switch {
	case err == nil:
		return m.f.Ended(h, observe.Released, nil)
	case errors.Is(err, zk.ErrNoNode) && earlier && m.s.same(h.owner):
		// Gone: deleted by an earlier delete of this hold whose answer was
		// lost, and the session that owns it lives on.
		return m.f.Ended(h, observe.Released, nil)
	case errors.Is(err, zk.ErrNoNode):
		// Gone with its session (or another client deleted it).
		return m.f.Ended(h, observe.Lost, ErrNotHeld)
	case m.s.isClosed():
		// The Session was closed under the delete: closing it ended the
		// session, and the child with it.
		return m.f.Ended(h, observe.Lost, errReleasedByClose)
	}
	// ZooKeeper did not answer within the bound (a partition, or an
	// ensemble electing a leader for longer): the delete may never have
	// reached it, and the child would head the line for as long as the
	// session lives. Keep deleting it in the background, as a failed
	// Lock's child is, until it is gone or the Session is closed. The
	// hold is kept: a second Unlock learns the outcome.
	if tok, _, ok := parseChild(strings.TrimPrefix(h.node, m.path+"/")); ok {
		m.s.sweep(m.path, tok)
	}
	return fmt.Errorf("zklock: delete %q: %w", h.node, err)
}

// errReleasedByClose is Unlock's answer once the Session has been closed:
// closing it ended the session, which deleted the child (at once, or when
// the server expires the session if it could not be told).
var errReleasedByClose = fmt.Errorf("%w: the Session was closed, which released it", ErrNotHeld)

// Fence returns the fencing token of the current hold: the zxid that
// created its child (its czxid). Every later holder, after any leader
// change, has a larger one. It returns 0 when the Mutex does not hold the
// lock as far as it knows.
func (m *Mutex) Fence() uint64 {
	if h := m.f.Cur.Get(); h != nil {
		return uint64(h.czxid)
	}
	return 0
}

// Seq returns the sequence number ZooKeeper gave the current hold's child
// (-1 when not held): it orders the lock's waiters, and restarts if the
// lock's node is deleted and made again, which is why [Mutex.Fence] is
// the zxid instead.
func (m *Mutex) Seq() int64 {
	if h := m.f.Cur.Get(); h != nil {
		return h.seq
	}
	return -1
}

// Node returns the path of the current hold's child, or "" when the Mutex
// does not hold the lock.
func (m *Mutex) Node() string {
	if h := m.f.Cur.Get(); h != nil {
		return h.node
	}
	return ""
}

// IsOwner returns a check that passes while the current hold's child
// exists: put it first in a multi-op (Session.Conn().Multi) to make a
// write kept in ZooKeeper conditional on still holding the lock. When the
// Mutex does not hold the lock, the check never passes.
func (m *Mutex) IsOwner() *zk.CheckVersionRequest {
	if h := m.f.Cur.Get(); h != nil {
		return &zk.CheckVersionRequest{Path: h.node, Version: 0}
	}
	return &zk.CheckVersionRequest{Path: m.path + "/" + childPrefix + "not-held", Version: 0}
}

// Done returns a channel closed when the Mutex can no longer vouch for the
// current hold: the connection to ZooKeeper was lost (the child survives
// if the client reconnects within the session timeout, and Unlock still
// deletes it), the session expired (the child is gone), or no request
// sent in the last 2/3 of the session timeout has been answered. It closes
// at least a third of the session timeout before the server may expire
// the session and another client hold the lock (see the package doc). It
// is a signal to stop, not a guarantee: a holder paused past its session
// timeout sees Done only when it runs again. When the Mutex does not hold
// the lock, Done returns a closed channel.
func (m *Mutex) Done() <-chan struct{} {
	if h := m.f.Cur.Get(); h != nil {
		return h.lost
	}
	return frame.Closed()
}

// Path returns the lock's path.
func (m *Mutex) Path() string { return m.path }

// check returns the error every method returns before it sends anything:
// the invalid arguments New found, or that New did not make m.
func (m *Mutex) check() error {
	if m == nil {
		return args.Invalid(ErrInvalid, frame.NotMade)
	}
	return m.f.Check(ErrInvalid)
}

// parseChild splits a child's name, lock-<token>-<sequence>, into its token
// and sequence.
func parseChild(name string) (tok string, seq int64, ok bool) {
	rest, found := strings.CutPrefix(name, childPrefix)
	if !found || len(rest) < seqDigits+2 || rest[len(rest)-seqDigits-1] != '-' {
		return "", 0, false
	}
	seq, err := strconv.ParseInt(rest[len(rest)-seqDigits:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return rest[:len(rest)-seqDigits-1], seq, true
}

// predecessor returns the child with the largest sequence below seq, or ""
// when there is none (seq is the oldest).
func predecessor(children []string, seq int64) string {
	best, bestSeq := "", int64(-1)
	for _, c := range children {
		if _, s, ok := parseChild(c); ok && s < seq && s > bestSeq {
			best, bestSeq = c, s
		}
	}
	return best
}

// call runs f, which cannot be cancelled (go-zookeeper takes no context),
// and returns its result, or ctx's error as soon as ctx ends; f then
// finishes in the background (go-zookeeper fails every pending call when
// its connection drops, within two thirds of the session timeout).
func call[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
