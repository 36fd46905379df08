package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/internal/history"
)

// Schedules 2 (lost reply) and 3 (late delivery) fault one request of a
// lock at a time. For Redis the proxy reads RESP and picks commands by name
// (cmd.go); etcd's gRPC, ZooKeeper's jute and PostgreSQL's wire
// protocol are binary, so for the locks on them a client reaches its
// servers through a rawNet, which counts what the client sends in chunks
// (one read of the client's bytes as they arrive: in practice one
// request, since each of these clients writes a request, or a gRPC
// message, in one write) and faults the k-th chunk after it was armed:
//
//   - rawDrop delivers it to the server and loses what the server sends
//     next on that connection (the reply): both sides of the connection
//     are reset instead. The client's own retry, if it has one, goes again
//     on a new connection.
//   - rawHold holds it, and from then on every byte both ways on all of
//     the client's connections, new ones included (a partition of that
//     client), until release: then the held bytes are delivered, to a
//     server whose client may have given up and gone (a connection the
//     client closed meanwhile is closed to the server after its bytes).

// rawMode is what a rawNet does to the chunk it is armed for.
type rawMode int

const (
	rawCount rawMode = iota // count only
	RawDrop                 // deliver it, lose the reply, reset
	RawHold                 // hold it and everything after, both ways, until release
)

// RawNet is one client's network to the servers of a non-Redis system:
// a listener per server, all sharing one count and one fault. Its methods
// are safe for concurrent use.
type RawNet struct {
	Mu      sync.Mutex // protects the fields below and every rawConn's queues
	cond    *sync.Cond // signalled when a queue, holding or closed changes
	lns     []net.Listener
	Conns   map[*rawConn]bool
	chunks  int     // chunks the client sent since arm
	mode    rawMode // the fault armed
	at      int     // the chunk it is armed for (0-based)
	fired   chan struct{}
	holding bool
	dropped int // replies lost
	closed  bool
	wg      sync.WaitGroup
}

// rawConn is one proxied connection: a queue each way.
type rawConn struct {
	client, server net.Conn
	up, down       [][]byte // client→server and server→client bytes not written yet
	UpEOF, downEOF bool     // the side that feeds the queue has ended
	dropNext       bool     // the next bytes from the server are lost (rawDrop)
	dead           bool
}

func NewRawNet() *RawNet {
	rn := &RawNet{Conns: map[*rawConn]bool{}, fired: make(chan struct{}), at: -1}
	rn.cond = sync.NewCond(&rn.Mu)
	return rn
}

// Listen adds a listener forwarding to target and returns its address.
func (rn *RawNet) Listen(target string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("faults: raw proxy: %w", err)
	}
	rn.Mu.Lock()
	if rn.closed {
		rn.Mu.Unlock()
		_ = ln.Close()
		return "", errors.New("faults: raw proxy closed")
	}
	rn.lns = append(rn.lns, ln)
	rn.wg.Add(1)
	rn.Mu.Unlock()
	go rn.accept(ln, target)
	return ln.Addr().String(), nil
}

// Arm resets the count and sets the fault for the chunk at index at
// (0-based) from now; rawCount with any at only counts.
func (rn *RawNet) Arm(mode rawMode, at int) {
	rn.Mu.Lock()
	defer rn.Mu.Unlock()
	rn.chunks, rn.mode, rn.at = 0, mode, at
	rn.fired = make(chan struct{})
}

// Count returns the chunks the client sent since arm.
func (rn *RawNet) Count() int {
	rn.Mu.Lock()
	defer rn.Mu.Unlock()
	return rn.chunks
}

// FiredC returns a channel closed when the armed chunk came.
func (rn *RawNet) FiredC() <-chan struct{} {
	rn.Mu.Lock()
	defer rn.Mu.Unlock()
	return rn.fired
}

// HasFired reports whether the armed chunk came.
func (rn *RawNet) HasFired() bool {
	select {
	case <-rn.FiredC():
		return true
	default:
		return false
	}
}

// IsHolding reports whether the client's bytes are held now.
func (rn *RawNet) IsHolding() bool {
	rn.Mu.Lock()
	defer rn.Mu.Unlock()
	return rn.holding
}

// Release ends a hold: held bytes flow, and the fault is disarmed.
func (rn *RawNet) Release() {
	rn.Mu.Lock()
	defer rn.Mu.Unlock()
	rn.holding = false
	rn.mode, rn.at = rawCount, -1
	rn.cond.Broadcast()
}

// Close stops every listener and connection and waits for them.
func (rn *RawNet) Close() {
	rn.Mu.Lock()
	if rn.closed {
		rn.Mu.Unlock()
		return
	}
	rn.closed = true
	lns := rn.lns
	var cs []*rawConn
	for c := range rn.Conns {
		cs = append(cs, c)
	}
	rn.cond.Broadcast()
	rn.Mu.Unlock()
	for _, ln := range lns {
		_ = ln.Close()
	}
	for _, c := range cs {
		_ = c.client.Close()
		_ = c.server.Close()
	}
	rn.wg.Wait()
}

func (rn *RawNet) accept(ln net.Listener, target string) {
	defer rn.wg.Done()
	for {
		cc, err := ln.Accept()
		if err != nil {
			return
		}
		sc, err := net.DialTimeout("tcp", target, 5*time.Second)
		if err != nil {
			_ = cc.Close()
			continue
		}
		c := &rawConn{client: cc, server: sc}
		rn.Mu.Lock()
		if rn.closed {
			rn.Mu.Unlock()
			_ = cc.Close()
			_ = sc.Close()
			return
		}
		rn.Conns[c] = true
		rn.wg.Add(4)
		rn.Mu.Unlock()
		go rn.readClient(c)
		go rn.readServer(c)
		go rn.write(c, true)
		go rn.write(c, false)
	}
}

// readClient queues the client's chunks for the server, counting them and
// applying the armed fault.
func (rn *RawNet) readClient(c *rawConn) {
	defer rn.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.client.Read(buf)
		rn.Mu.Lock()
		if n > 0 {
			if !rn.holding {
				if rn.chunks == rn.at && rn.mode != rawCount {
					close(rn.fired)
					switch rn.mode {
					case RawDrop:
						c.dropNext = true
					case RawHold:
						rn.holding = true
					}
				}
				rn.chunks++
			}
			c.up = append(c.up, append([]byte(nil), buf[:n]...))
		}
		if err != nil {
			c.UpEOF = true
		}
		rn.cond.Broadcast()
		rn.Mu.Unlock()
		if err != nil {
			return
		}
	}
}

// readServer queues the server's bytes for the client, or, when the
// client's last chunk is to lose its reply, resets both sides instead.
func (rn *RawNet) readServer(c *rawConn) {
	defer rn.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.server.Read(buf)
		rn.Mu.Lock()
		if n > 0 && c.dropNext {
			c.dropNext, c.dead = false, true
			rn.dropped++
			rn.cond.Broadcast()
			rn.Mu.Unlock()
			reset(c.client)
			reset(c.server)
			return
		}
		if n > 0 {
			c.down = append(c.down, append([]byte(nil), buf[:n]...))
		}
		if err != nil {
			c.downEOF = true
		}
		rn.cond.Broadcast()
		rn.Mu.Unlock()
		if err != nil {
			return
		}
	}
}

// write drains one queue of c (up: to the server) while nothing holds it;
// at the queue's end it closes the other side.
func (rn *RawNet) write(c *rawConn, up bool) {
	defer rn.wg.Done()
	dst := c.client
	if up {
		dst = c.server
	}
	for {
		rn.Mu.Lock()
		for {
			q, eof := c.down, c.downEOF
			if up {
				q, eof = c.up, c.UpEOF
			}
			if rn.closed || c.dead || (!rn.holding && (len(q) > 0 || eof)) {
				break
			}
			rn.cond.Wait()
		}
		if rn.closed || c.dead {
			rn.Mu.Unlock()
			return
		}
		var data []byte
		if up && len(c.up) > 0 {
			data, c.up = c.up[0], c.up[1:]
		} else if !up && len(c.down) > 0 {
			data, c.down = c.down[0], c.down[1:]
		}
		rn.Mu.Unlock()
		if data == nil { // the feeding side ended and the queue is empty
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			// Wait for the other direction to end too, then close.
			rn.Mu.Lock()
			for !rn.closed && !c.dead && !(c.UpEOF && c.downEOF) {
				rn.cond.Wait()
			}
			c.dead = true
			delete(rn.Conns, c)
			rn.cond.Broadcast()
			rn.Mu.Unlock()
			_ = c.client.Close()
			_ = c.server.Close()
			return
		}
		if _, err := dst.Write(data); err != nil {
			rn.Mu.Lock()
			c.dead = true
			rn.cond.Broadcast()
			rn.Mu.Unlock()
			_ = c.client.Close()
			_ = c.server.Close()
			return
		}
	}
}

// reset closes conn with RST.
func reset(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// discoverRaw counts, in one fault-free run of the script of schedules 2
// and 3 through rawNets, the chunks each client of im sends, and returns
// them as the ops to fault in turn: the first chunk of A, of B, of C, then
// the second of each, and so on, so that the first runs fault the start
// of each client's Lock.
func (fs *FaultSetup) discoverRaw(ctx context.Context, im *registry.Lock) ([]faultOp, error) {
	counts := map[string]int{}
	err := fs.discoveryRun(ctx, im, true, func(ev *Event) error {
		r := ev.runs[0]
		for _, rn := range r.raw {
			rn.Arm(rawCount, -1)
		}
		ev.each(func(r *FaultRun) { r.cycleAll(4*ev.Sch.TTL+2*time.Second, nil) })
		for name, rn := range r.raw {
			counts[name] = rn.Count()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []faultOp
	for k := 0; ; k++ {
		more := false
		for _, name := range []string{"A", "B", "C"} {
			if k < counts[name] {
				out = append(out, faultOp{Op: LockOp{raw: true, chunk: k}, Client: name})
				more = true
			}
		}
		if !more {
			return out, nil
		}
	}
}

// rawCommandFault is one run of schedule 2 (late false) or 3 for a lock
// not on Redis: fo's client's fo.op.chunk-th chunk in its turn loses its
// reply, or is held with everything after it until the client gave up and
// another client holds the lock (or the window passed), then delivered.
func (r *FaultRun) rawCommandFault(fo faultOp, late bool) {
	ev := r.Ev
	rn := r.raw[fo.Client]
	if rn == nil {
		r.failed = "no raw network for " + fo.Client
		return
	}
	what := fmt.Sprintf("%s by %s in its turn", fo.Op, fo.Client)
	if late {
		rn.Arm(RawHold, fo.Op.chunk)
		r.fault("armed: hold %s in the network, with everything %s sends after it, until it gave up and another client holds the lock", what, fo.Client)
	} else {
		rn.Arm(RawDrop, fo.Op.chunk)
		r.fault("armed: deliver %s and lose the reply (the connection is reset)", what)
	}
	fired := rn.FiredC()
	wctx, stop := context.WithCancel(ev.ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-fired:
		case <-wctx.Done():
			return
		}
		at := ev.clock.Now()
		if !late {
			r.fault("request delivered; its reply will be lost")
			return
		}
		r.fault("request held in the network (%s is cut off)", fo.Client)
		// The client gives up when its call's context ends: Lock's bound,
		// or Unlock's 5 s.
		deadline := time.Now().Add(4*ev.Sch.TTL + 8*time.Second)
		for time.Now().Before(deadline) && !r.failedSince(fo.Client, at) {
			if !env.SleepCtx(wctx, 5*time.Millisecond) {
				break
			}
		}
		deadline = time.Now().Add(window)
		for time.Now().Before(deadline) && !r.someoneInside() {
			if !env.SleepCtx(wctx, 5*time.Millisecond) {
				break
			}
		}
		r.fault("held bytes delivered now, after %s gave up", fo.Client)
		rn.Release()
		r.mu.Lock()
		r.delivered = time.Now()
		r.mu.Unlock()
	})
	var more func() bool
	if late {
		// Every client goes again until the held bytes were delivered
		// (and a moment after), so that they land on a lock someone
		// holds, and so that the cut-off client is never the only one
		// who wants the lock (its wait is the partition's, not the
		// lock's); while the chunk has not come, until the faulted
		// client's first turn is over.
		armed := ev.clock.Now()
		more = func() bool {
			if !rn.HasFired() {
				return !r.turnOver(fo.Client, armed)
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.delivered.IsZero() || time.Since(r.delivered) < 300*time.Millisecond
		}
	}
	r.cycleAll(4*ev.Sch.TTL+2*time.Second, more)
	stop()
	wg.Wait()
	rn.Release()
	if !rn.HasFired() {
		r.fault("(%s never came: the client sent fewer chunks in this run)", what)
	}
}

// turnOver reports whether client's turn that began after at is over: it
// released the lock or gave up waiting for it.
func (r *FaultRun) turnOver(client string, at time.Duration) bool {
	for _, e := range r.hist.Events() {
		if e.Client == client && e.At >= at &&
			(e.Kind == history.Release || e.Kind == history.Acquire && strings.HasPrefix(e.Text, "gave up")) {
			return true
		}
	}
	return false
}
