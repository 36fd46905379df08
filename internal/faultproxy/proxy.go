// Package faultproxy is a TCP proxy that injects network faults between a
// client and a Redis server on loopback.
//
// Faults on the whole link: latency each way, a blackhole (a partition:
// bytes are held, as TCP would keep retransmitting them, and delivered when
// the partition heals) and resets (RST on every connection).
//
// Faults on single commands, which the proxy finds by reading the RESP
// protocol (see [Match]): a command delivered whose reply is lost
// ([Proxy.DropReply]: the server ran it, the client sees its connection
// close, and go-redis on its default options sends it again), a command held
// in the network and delivered after the client gave up ([Proxy.Hold],
// [Proxy.DeliverLate]), and connections that go silent both ways while
// they stay open, half-open connections ([Proxy.Stall]).
//
// Point a client (or a replica's REPLICAOF) at [Proxy.Addr] instead of the
// server. Faults apply to connections already open and to new ones.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// drainTimeout bounds how long a connection whose client has gone stays
// open to the server, to deliver the commands still held or queued for it
// and read their replies.
const drainTimeout = 5 * time.Second

// Proxy forwards TCP connections from its loopback address to a target.
// Its methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener

	mu        sync.Mutex // protects the fields below, and every Rule's state
	latency   time.Duration
	holding   bool          // blackhole: writers wait
	resetting bool          // new connections are reset at once
	changed   chan struct{} // closed and replaced whenever a writer may go on
	rules     []*Rule
	links     map[*link]struct{}
	closed    bool

	wg sync.WaitGroup // accept loop and link goroutines
}

// New starts a proxy on a free 127.0.0.1 port forwarding to target.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{target: target, ln: ln, links: map[*link]struct{}{}, changed: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the address clients should dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// SetLatency delays every command (client to server) and every chunk of
// reply bytes (server to client) by d, so a request/reply round trip gains
// 2*d. Bytes already queued keep their delay. d <= 0 removes the latency.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = max(d, 0)
}

// Blackhole holds every byte in both directions until [Proxy.Heal], as a
// network partition does: connections stay open, commands get no reply,
// clients time out. Nothing is lost; held bytes flow on Heal.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holding = true
}

// Reset sends RST on every open connection and on every new one until
// [Proxy.Heal]: clients see "connection reset by peer" at once.
func (p *Proxy) Reset() {
	p.mu.Lock()
	p.resetting = true
	links := p.snapshotLocked()
	p.mu.Unlock()
	for _, l := range links {
		l.closeAll(true)
	}
}

// Heal ends a blackhole (held bytes flow) and stops resetting connections.
// Latency and rules are kept.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holding = false
	p.resetting = false
	p.broadcastLocked()
}

// DropReply loses the replies of the next n commands that match m (every
// matching command if n <= 0): each is delivered to the server, and when
// its reply comes back the proxy closes the client's connection instead of
// forwarding it. The client sees EOF although the server ran the command,
// exactly as when a reply is lost in the network; go-redis on its default
// options then sends the command again on a new connection. Replies to
// commands pipelined behind it on that connection are lost with it.
func (p *Proxy) DropReply(m Match, n int) *Rule { return p.addRule(m, dropReply, n) }

// DropBatch loses a whole pipelined batch, n times (every time if n <= 0):
// the batch is the command that matches m and every command the client
// sends on the same connection after it until the first of their replies
// comes back from the server. Each is delivered, and the server runs it;
// once the proxy has read the replies of all of them, it closes the
// client's connection without forwarding any. A client that pipelines
// (go-redis's AutoPipeliner, or a Pipeline on its default options) sees
// the whole batch fail with a network error although the server ran it,
// and sends the batch again: every command in it runs twice. Each command
// of the batch counts as a hit of the rule, and [Rule.Caught] names them.
func (p *Proxy) DropBatch(m Match, n int) *Rule { return p.addRule(m, dropBatch, n) }

// Hold holds the next n commands that match m (every one if n <= 0) in the
// network, together with whatever the client sends after each on the same
// connection, until [Rule.Release] or [Rule.Remove]: the client gets no
// reply and gives up (its read timeout or context ends). Released commands
// are then delivered to the server, which runs them; their replies go
// nowhere, as the client has closed that connection by then.
func (p *Proxy) Hold(m Match, n int) *Rule { return p.addRule(m, hold, n) }

// DeliverLate is [Proxy.Hold], released after d.
func (p *Proxy) DeliverLate(m Match, n int, d time.Duration) *Rule {
	r := p.Hold(m, n)
	time.AfterFunc(d, r.Release)
	return r
}

// Stall freezes, both ways, every connection open now that has sent a
// command named m.Command, until [Rule.Release] or [Rule.Remove]: a
// half-open connection. The connections stay open and nothing reaches
// either side; a client notices only by its own timeouts and health
// checks, and the server still counts a stalled subscriber (PUBLISH
// reaches it). Connections made later are not stalled, so a client that
// gives up on a dead connection and dials again gets through, as it would
// past a peer that vanished. Release lets the held bytes flow.
func (p *Proxy) Stall(m Match) *Rule {
	r := p.addRule(m, stall, 0)
	p.mu.Lock()
	defer p.mu.Unlock()
	r.removed = true // it acts on these connections only
	for l := range p.links {
		if !l.frozen() && m.Command != "" && l.seen[strings.ToUpper(m.Command)] {
			l.stalled = r
			r.use(command{name: strings.ToUpper(m.Command)})
		}
	}
	return r
}

// Count counts the commands that match m, and does nothing else to them.
func (p *Proxy) Count(m Match) *Rule { return p.addRule(m, count, 0) }

// Clear removes every rule, releasing what they hold.
func (p *Proxy) Clear() {
	p.mu.Lock()
	rules := p.rules
	p.rules = nil
	p.mu.Unlock()
	for _, r := range rules {
		r.Remove()
	}
}

func (p *Proxy) addRule(m Match, a action, n int) *Rule {
	if n <= 0 {
		n = -1
	}
	r := &Rule{p: p, match: m, action: a, left: n}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, r)
	return r
}

// Close stops the proxy and closes every connection. It is safe to call
// more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.holding = false
	links := p.snapshotLocked()
	p.broadcastLocked()
	p.mu.Unlock()
	err := p.ln.Close()
	for _, l := range links {
		l.closeAll(false)
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) snapshotLocked() []*link {
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	return links
}

// broadcastLocked wakes every goroutine waiting for the proxy's state to
// change; p.mu must be held.
func (p *Proxy) broadcastLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// await blocks until cond, called with p.mu held, is true, or ctx ends.
func (p *Proxy) await(ctx context.Context, cond func() bool) error {
	for {
		p.mu.Lock()
		if cond() {
			p.mu.Unlock()
			return nil
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // listener closed
		}
		p.mu.Lock()
		resetting, closed := p.resetting, p.closed
		p.mu.Unlock()
		if resetting || closed {
			shut(c, true)
			continue
		}
		s, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			shut(c, true)
			continue
		}
		l := &link{p: p, client: c, server: s, seen: map[string]bool{}}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			l.closeAll(false)
			continue
		}
		p.links[l] = struct{}{}
		p.mu.Unlock()
		up, down := make(chan item, 256), make(chan item, 256)
		l.wg.Add(4)
		p.wg.Add(1)
		go l.readCommands(up)
		go l.writeCommands(up)
		go l.readReplies(down)
		go l.writeReplies(down)
		go func() {
			defer p.wg.Done()
			l.wg.Wait()
			l.closeAll(false)
			p.mu.Lock()
			delete(p.links, l)
			p.mu.Unlock()
		}()
	}
}

// shut closes c; with rst, with RST instead of FIN.
func shut(c net.Conn, rst bool) {
	if tc, ok := c.(*net.TCPConn); ok && rst {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// link is one proxied connection pair: four goroutines, one reader and one
// writer each way.
type link struct {
	p              *Proxy
	client, server net.Conn
	wg             sync.WaitGroup

	clientOnce, serverOnce sync.Once

	// Guarded by p.mu:
	pending    []sent          // the commands sent whose replies have not come back, oldest first
	passthru   bool            // replies no longer pair with commands (Pub/Sub, or not RESP)
	clientGone bool            // the client side is closed: replies are read and dropped
	stalled    *Rule           // set while a Stall rule freezes the link
	seen       map[string]bool // names of the commands the client has sent
	batch      *Rule           // the DropBatch rule whose batch is open: the commands read now join it
}

// sent is a command delivered to the server whose reply is due.
type sent struct {
	drop  bool  // lose the reply
	batch bool  // one of a lost batch: the client's connection closes once every reply of it is in
	hold  *Rule // the rule that held the command, if any: its answer counts
}

// item is a unit of bytes on its way: a whole command (client to server)
// or a chunk of replies (server to client).
type item struct {
	data    []byte
	due     time.Time
	command bool  // a whole command, whose reply the server will send
	drop    bool  // lose its reply
	batch   bool  // one of a lost batch (see sent.batch)
	hold    *Rule // deliver only once this rule is released
	subs    bool  // a SUBSCRIBE: the link's replies stop pairing with commands
}

func (l *link) closeClient(rst bool) {
	l.clientOnce.Do(func() {
		l.p.mu.Lock()
		l.clientGone = true
		l.p.mu.Unlock()
		shut(l.client, rst)
	})
}

func (l *link) closeServer(rst bool) {
	l.serverOnce.Do(func() {
		shut(l.server, rst)
	})
}

func (l *link) closeAll(rst bool) {
	l.closeClient(rst)
	l.closeServer(rst)
}

// readCommands reads the client's bytes, splits them into commands, decides
// what happens to each, and queues them for the server.
func (l *link) readCommands(q chan<- item) {
	defer l.wg.Done()
	defer close(q)
	var buf []byte
	raw := false
	tmp := make([]byte, 32<<10)
	for {
		n, err := l.client.Read(tmp)
		buf = append(buf, tmp[:n]...)
		for len(buf) > 0 {
			if raw {
				q <- l.p.stamp(item{data: buf})
				buf = nil
				break
			}
			cmd, size, ok, perr := parseCommand(buf)
			if perr != nil {
				raw = true
				l.p.mu.Lock()
				l.passthru = true
				l.p.mu.Unlock()
				continue
			}
			if !ok {
				break
			}
			it := l.classify(cmd)
			it.data = append([]byte(nil), buf[:size]...)
			buf = buf[size:]
			q <- l.p.stamp(it)
		}
		if err != nil {
			return
		}
	}
}

// stamp sets when an item is due, from the latency now in force.
func (p *Proxy) stamp(it item) item {
	p.mu.Lock()
	d := p.latency
	p.mu.Unlock()
	it.due = time.Now().Add(d)
	return it
}

// classify applies the rules to one command.
func (l *link) classify(c command) item {
	it := item{command: true, subs: c.subscribes()}
	p := l.p
	p.mu.Lock()
	defer p.mu.Unlock()
	l.seen[c.name] = true
	faulted := false
	if r := l.batch; r != nil && !setup[c.name] {
		// A lost batch is open on this connection: the command joins it.
		faulted, it.drop, it.batch = true, true, true
		r.use(c)
	}
	for _, r := range p.rules {
		if !r.active() || !r.match.matches(c) {
			continue
		}
		if r.action == count {
			r.use(c)
			continue
		}
		if faulted || !r.takes() {
			continue
		}
		faulted = true
		r.use(c)
		switch r.action {
		case dropReply:
			it.drop = true
		case hold:
			it.hold = r
		case dropBatch:
			it.drop, it.batch = true, true
			l.batch = r
		}
	}
	return it
}

// writeCommands delivers queued commands to the server, in order, each
// when the link's faults let it go. Once the client has gone (q closed), it
// still delivers what it holds and waits, within drainTimeout, for the
// replies, so that a command "in the network" does reach the server.
func (l *link) writeCommands(q <-chan item) {
	defer l.wg.Done()
	defer l.closeServer(false)
	for it := range q {
		if !l.wait(it) {
			return
		}
		l.p.mu.Lock()
		if it.command {
			l.pending = append(l.pending, sent{drop: it.drop, batch: it.batch, hold: it.hold})
		}
		if it.subs {
			l.passthru = true
		}
		l.p.mu.Unlock()
		if _, err := l.server.Write(it.data); err != nil {
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	_ = l.p.await(ctx, func() bool { return len(l.pending) == 0 || l.passthru || l.p.closed })
}

// wait blocks until it may be written: its latency has passed, and no
// blackhole, stall or hold stops it. It reports false when the proxy closed.
func (l *link) wait(it item) bool {
	if d := time.Until(it.due); d > 0 {
		time.Sleep(d)
	}
	p := l.p
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return false
		}
		blocked := p.holding || l.frozen() || it.hold != nil && it.hold.holding()
		ch := p.changed
		p.mu.Unlock()
		if !blocked {
			return true
		}
		<-ch
	}
}

// readReplies reads the server's bytes, pairs each reply with the command
// it answers, and queues it for the client, unless that reply is to be
// lost: then the client's connection is closed instead.
func (l *link) readReplies(q chan<- item) {
	defer l.wg.Done()
	defer close(q)
	var buf []byte
	tmp := make([]byte, 32<<10)
	for {
		n, err := l.server.Read(tmp)
		buf = append(buf, tmp[:n]...)
		for len(buf) > 0 {
			p := l.p
			p.mu.Lock()
			passthru := l.passthru
			p.mu.Unlock()
			if passthru {
				q <- p.stamp(item{data: buf})
				buf = nil
				break
			}
			size, kind, ok, perr := parseReply(buf)
			if perr != nil {
				p.mu.Lock()
				l.passthru = true
				p.mu.Unlock()
				continue
			}
			if !ok {
				break
			}
			frame := append([]byte(nil), buf[:size]...)
			buf = buf[size:]
			lose, closeNow := false, false
			if kind == answer {
				p.mu.Lock()
				if len(l.pending) > 0 {
					s := l.pending[0]
					if r := s.hold; r != nil {
						r.answered++
					}
					l.pending = l.pending[1:]
					lose, closeNow = s.drop, s.drop
					if s.batch {
						// The batch's first reply is in: it takes no
						// more commands, and the client's connection
						// closes once its last reply is in too.
						l.batch = nil
						closeNow = !slices.ContainsFunc(l.pending, func(s sent) bool { return s.batch })
					}
					p.broadcastLocked()
				}
				p.mu.Unlock()
			}
			if closeNow {
				l.closeClient(false)
			}
			if lose {
				continue // the reply is lost: never forwarded
			}
			q <- p.stamp(item{data: frame})
		}
		if err != nil {
			return
		}
	}
}

// writeReplies delivers reply bytes to the client. Once the client is gone
// it drops them, and keeps the server side open until the commands still on
// their way have been answered.
func (l *link) writeReplies(q <-chan item) {
	defer l.wg.Done()
	defer func() {
		l.closeClient(false)
		for range q { // let the reader finish
		}
	}()
	for it := range q {
		if !l.wait(it) {
			return
		}
		l.p.mu.Lock()
		gone := l.clientGone
		l.p.mu.Unlock()
		if gone {
			continue
		}
		if _, err := l.client.Write(it.data); err != nil {
			if !errors.Is(err, net.ErrClosed) {
				l.closeClient(false)
			}
			continue
		}
	}
}

// frozen reports whether a Stall rule freezes the link; p.mu must be held.
func (l *link) frozen() bool { return l.stalled != nil && l.stalled.holding() }

// Start starts a proxy to target for a test and closes it in tb.Cleanup.
func Start(tb testing.TB, target string) *Proxy {
	tb.Helper()
	p, err := New(target)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}
