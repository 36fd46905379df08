package pglock

import (
	"context"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Poolers. A pooler such as PgBouncer in transaction or statement pooling
// hands a client's server session to other clients between transactions
// (or statements). A session advisory lock taken outside a transaction
// then stays on a server session that others use: their
// pg_advisory_lock on it succeeds re-entrantly (two holders), and the
// holder's pg_advisory_unlock may run on another session (the lock stays
// held). Comparing pg_backend_pid() across statements cannot tell a
// transaction pooler from a direct connection, since the pooler may hand
// back the same server session every time.
//
// What can tell is the startup message: PostgreSQL sends each connection
// its own process id (BackendKeyData), which pgconn.PgConn.PID reports.
// A pooler that can move a client between server sessions cannot send the
// process id of one of them (it must route the client's cancel requests
// itself), so it sends one of its own making; PgBouncer does so in every
// pool mode. sessionShared compares that id with pg_backend_pid() once per
// connection: equal, the connection is its server session's alone, for
// its life (a direct connection; a pooler passing the real id keeps the
// session for the client). Different, the lock may be behind a
// transaction pooler, and a Mutex then holds its lock in a transaction
// left open until Unlock (pg_advisory_xact_lock): a pooler must keep a
// client's open transaction on one server session, and if the client goes
// away the pooler closes that server connection, which ends the lock.
// A statement pooler refuses the open transaction, and Lock returns that
// error.

// sharedKey marks, in a connection's CustomData, whether its server
// session may be shared.
const sharedKey = "pglock.shared"

// sessionShared reports whether conn's server session may be handed to
// other clients between transactions (see above), asking the server once
// per connection.
func sessionShared(ctx context.Context, conn *pgxpool.Conn) (bool, error) {
	pc := conn.Conn().PgConn()
	if v, ok := pc.CustomData()[sharedKey].(bool); ok {
		return v, nil
	}
	rows, err := run(ctx, conn, `SELECT pg_backend_pid()`)
	if err != nil {
		return false, err
	}
	shared := len(rows) != 1 || rows[0][0] != strconv.FormatUint(uint64(pc.PID()), 10)
	pc.CustomData()[sharedKey] = shared
	return shared, nil
}

// Waiting connections. Each Lock waits in the server on a connection of
// its own, taken from the caller's pool; with many waiters they would take
// every connection and leave none for the holders' own statements, which
// then wait on the waiters: a deadlock until contexts end. So the Locks of
// this process that wait on one *pgxpool.Pool take at most half its
// connections (MaxConns/2), and not the last one the holds of this
// process on it leave: with h holds, at most MaxConns-h-1 wait, so that
// the holders keep a connection for their own statements (half alone was
// not enough: with half the pool held, the waiters took the other half).
// One Lock may always wait, whatever the counts, so that Locks go on (a
// holder's nested Lock among them) however small the pool. Further Locks
// wait in the process, in line, for a waiter to be granted or give up, or
// a hold to end. TryLock does not wait and is not counted. Pools of
// another type are not bounded.
type turns struct {
	mu      sync.Mutex
	waiting int           // Locks of the process waiting in the server
	holding int           // holds of the process, a connection each
	changed chan struct{} // closed and replaced when waiting or holding falls
}

var pools sync.Map // *pgxpool.Pool -> *turns

// turnsOf returns pool's turns, nil for a pool that is not a
// *pgxpool.Pool.
func turnsOf(pool Pool) (*turns, int) {
	p, ok := pool.(*pgxpool.Pool)
	if !ok {
		return nil, 0
	}
	v, ok := pools.Load(p)
	if !ok {
		v, _ = pools.LoadOrStore(p, &turns{changed: make(chan struct{})})
	}
	return v.(*turns), int(p.Config().MaxConns)
}

// waitTurn waits for a turn to wait on pool, or for ctx to end (its
// error); leave ends the turn.
func waitTurn(ctx context.Context, pool Pool) (leave func(), err error) {
	t, maxConns := turnsOf(pool)
	if t == nil {
		return func() {}, nil
	}
	for {
		t.mu.Lock()
		room := max(1, min(maxConns/2, maxConns-t.holding-1))
		if t.waiting < room {
			t.waiting++
			t.mu.Unlock()
			return func() { t.fall(&t.waiting) }, nil
		}
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// held counts a hold of the process on pool, and returns what ends it.
func held(pool Pool) (ended func()) {
	t, _ := turnsOf(pool)
	if t == nil {
		return func() {}
	}
	t.mu.Lock()
	t.holding++
	t.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { t.fall(&t.holding) }) }
}

// fall decrements n, one of t's counts, and wakes the Locks waiting for a
// turn.
func (t *turns) fall(n *int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	*n--
	close(t.changed)
	t.changed = make(chan struct{})
}
