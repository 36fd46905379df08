// Package faultproxy is a TCP proxy that injects network faults between a
// client and a Redis server on loopback: latency each way, a blackhole
// (a partition: bytes are held, as TCP would keep retransmitting them, and
// delivered when the partition heals) and resets (RST on every connection).
//
// Point a client (or a replica's REPLICAOF) at [Proxy.Addr] instead of the
// server. Faults apply to connections already open and to new ones.
package faultproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections from its loopback address to a target.
// Its methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener

	mu        sync.Mutex // protects the fields below
	latency   time.Duration
	holding   bool          // blackhole: writers wait
	healed    chan struct{} // closed when the current blackhole ends
	resetting bool          // new connections are reset at once
	links     map[*link]struct{}
	closed    bool

	wg sync.WaitGroup // accept loop and link goroutines
}

// link is one proxied connection pair.
type link struct {
	client, server net.Conn
	once           sync.Once
}

func (l *link) close(rst bool) {
	l.once.Do(func() {
		for _, c := range []net.Conn{l.client, l.server} {
			if tc, ok := c.(*net.TCPConn); ok && rst {
				_ = tc.SetLinger(0) // close sends RST instead of FIN
			}
			_ = c.Close()
		}
	})
}

// New starts a proxy on a free 127.0.0.1 port forwarding to target.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{target: target, ln: ln, links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the address clients should dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// SetLatency delays every chunk of bytes by d in each direction, so a
// request/reply round trip gains 2*d. Bytes already queued keep their delay.
// d <= 0 removes the latency.
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
	if !p.holding {
		p.holding = true
		p.healed = make(chan struct{})
	}
}

// Reset sends RST on every open connection and on every new one until
// [Proxy.Heal]: clients see "connection reset by peer" at once.
func (p *Proxy) Reset() {
	p.mu.Lock()
	p.resetting = true
	links := p.snapshotLocked()
	p.mu.Unlock()
	for _, l := range links {
		l.close(true)
	}
}

// Heal ends a blackhole (held bytes flow) and stops resetting connections.
// Latency is kept.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.holding {
		p.holding = false
		close(p.healed)
	}
	p.resetting = false
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
	links := p.snapshotLocked()
	if p.holding {
		p.holding = false
		close(p.healed)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, l := range links {
		l.close(false)
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
			(&link{client: c, server: c}).close(true)
			continue
		}
		s, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			(&link{client: c, server: c}).close(true)
			continue
		}
		l := &link{client: c, server: s}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			l.close(false)
			continue
		}
		p.links[l] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(4)
		up, down := make(chan chunk, 256), make(chan chunk, 256)
		go p.read(l, c, up)
		go p.write(l, s, up)
		go p.read(l, s, down)
		go p.write(l, c, down)
	}
}

// chunk is bytes read at one moment, due for delivery at due.
type chunk struct {
	data []byte
	due  time.Time
}

func (p *Proxy) read(l *link, src net.Conn, q chan<- chunk) {
	defer p.wg.Done()
	defer close(q)
	for {
		buf := make([]byte, 32<<10)
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			d := p.latency
			p.mu.Unlock()
			q <- chunk{data: buf[:n], due: time.Now().Add(d)}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) write(l *link, dst net.Conn, q <-chan chunk) {
	defer p.wg.Done()
	defer func() {
		l.close(false)
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
		for range q { // let the reader finish
		}
	}()
	for c := range q {
		if !p.waitHealed() {
			return
		}
		if wait := time.Until(c.due); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := dst.Write(c.data); err != nil {
			if !errors.Is(err, net.ErrClosed) {
				l.close(false)
			}
			return
		}
	}
}

// waitHealed blocks while the proxy is a blackhole. It reports false when
// the proxy closed meanwhile.
func (p *Proxy) waitHealed() bool {
	for {
		p.mu.Lock()
		holding, healed, closed := p.holding, p.healed, p.closed
		p.mu.Unlock()
		if closed {
			return false
		}
		if !holding {
			return true
		}
		<-healed
	}
}

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
