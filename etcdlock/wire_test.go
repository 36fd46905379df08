package etcdlock_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// wire is the network between one etcd client and etcd, built into the
// client's dialer so a test can fault one connection and not the next:
// real TCP to a real member, with the bytes of each connection read as
// HTTP/2 frames on their way. faultproxy holds or drops whole RESP
// commands only, and its Blackhole holds every connection at once; here a
// connection can be partitioned (its bytes held), given up by the client
// (cut: gRPC sees it close, as when its keep-alive gives up, and dials a
// new one, which is not held), and its held bytes delivered to etcd after
// that, as a network delivers what it held once it heals. A reply can be
// lost for real too (dropReply): etcd runs the request, and the client's
// connection closes when the reply comes back.
type wire struct {
	t      *testing.T
	target string

	mu      sync.Mutex // protects the fields below and every wireConn's
	conns   []*wireConn
	changed chan struct{}            // closed and replaced on every change
	before  map[string]func(req any) // run once, right before the next call of a gRPC method is sent
	after   map[string]func()        // run once, right after the next call of a gRPC method returned
}

// wireConn is one connection: gRPC's end of a pipe, and the TCP connection
// to etcd, with two pumps between them.
type wireConn struct {
	w      *wire
	client net.Conn // the pipe's end the pumps use; gRPC has the other
	raw    net.Conn // to etcd

	// Guarded by w.mu:
	holding    bool            // client bytes are held, not sent
	held       []byte          // the bytes held
	heldStream uint32          // the first stream opened while holding whose request is whole (DATA with END_STREAM)
	heldWhole  bool            // heldStream is known
	cut        bool            // gRPC's end is closed; server frames are dropped
	answered   bool            // etcd ended the held stream (HEADERS with END_STREAM, or RST_STREAM)
	seen       []string        // the frames etcd sent after the cut, for a failure's message
	dropNext   bool            // lose the reply to the next request the client sends whole on a new stream
	dropStream uint32          // that stream, once known
	opened     map[uint32]bool // streams opened since hold or dropReply
}

const (
	frameData    = 0x0
	frameHeaders = 0x1
	frameRST     = 0x3
	flagEnd      = 0x1
)

func newWire(t *testing.T, target string) *wire {
	w := &wire{t: t, target: target, changed: make(chan struct{}), before: map[string]func(any){}, after: map[string]func(){}}
	t.Cleanup(w.close)
	return w
}

// client returns a client on the wire's connections, on clientv3's
// default options as sysclient sets them, closed when the test ends.
func (w *wire) client(t *testing.T) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            []string{w.target},
		DialTimeout:          2 * time.Second,
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               zap.NewNop(),
		DialOptions: []grpc.DialOption{
			grpc.WithContextDialer(w.dial),
			// Below clientv3's retry interceptor: runs for every attempt.
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				w.mu.Lock()
				f := w.before[method]
				delete(w.before, method)
				w.mu.Unlock()
				if f != nil {
					f(req)
				}
				err := invoker(ctx, method, req, reply, cc, opts...)
				w.mu.Lock()
				g := w.after[method]
				delete(w.after, method)
				w.mu.Unlock()
				if g != nil {
					g()
				}
				return err
			}),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (w *wire) dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	mine, theirs := net.Pipe()
	c := &wireConn{w: w, client: mine, raw: raw}
	w.mu.Lock()
	w.conns = append(w.conns, c)
	w.mu.Unlock()
	go c.up()
	go c.down()
	return theirs, nil
}

// beforeCall runs f once, with the request, right before the next call of
// method (a gRPC method name, "/etcdserverpb.KV/Txn") is sent.
func (w *wire) beforeCall(method string, f func(req any)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.before[method] = f
}

// clearCalls forgets the functions of beforeCall and afterCall not run yet.
func (w *wire) clearCalls() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.before)
	clear(w.after)
}

// afterCall runs f once, right after the next call of method returned.
func (w *wire) afterCall(method string, f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.after[method] = f
}

// current returns the newest connection.
func (w *wire) current() *wireConn {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.conns) == 0 {
		w.t.Fatal("wire: no connection yet")
	}
	return w.conns[len(w.conns)-1]
}

func (w *wire) broadcastLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// await waits until cond, called with w.mu held, is true; it fails the
// test after d.
func (w *wire) await(d time.Duration, what string, cond func() bool) {
	w.t.Helper()
	timeout := time.After(d)
	for {
		w.mu.Lock()
		ok, ch := cond(), w.changed
		w.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			w.mu.Lock()
			var seen [][]string
			for _, c := range w.conns {
				seen = append(seen, c.seen)
			}
			w.mu.Unlock()
			w.t.Fatalf("wire: not true after %v: %s (frames from etcd after each cut: %q)", d, what, seen)
		}
	}
}

func (w *wire) close() {
	w.mu.Lock()
	conns := w.conns
	w.mu.Unlock()
	for _, c := range conns {
		_ = c.client.Close()
		_ = c.raw.Close()
	}
}

// hold partitions c: from now on the client's bytes are held.
func (c *wireConn) hold() {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	c.holding = true
	c.opened = map[uint32]bool{}
}

// awaitHeld waits until the first request sent after hold is held whole.
func (c *wireConn) awaitHeld() {
	c.w.t.Helper()
	c.w.await(10*time.Second, "a request held", func() bool { return c.heldWhole })
}

// giveUp closes gRPC's end of c, as gRPC does when its keep-alive finds the
// connection dead: every call on it fails, and the client dials anew. The
// held bytes stay held, and c's TCP connection to etcd stays open.
func (c *wireConn) giveUp() {
	c.w.mu.Lock()
	c.cut = true
	c.w.broadcastLocked()
	c.w.mu.Unlock()
	_ = c.client.Close()
}

// giveUpWhenHeld gives c up once its held request is held whole, or after
// 10s; it runs in a goroutine of its own, so it does not fail the test.
func (c *wireConn) giveUpWhenHeld() {
	timeout := time.After(10 * time.Second)
	for {
		c.w.mu.Lock()
		ok, ch := c.heldWhole, c.w.changed
		c.w.mu.Unlock()
		if ok {
			break
		}
		select {
		case <-ch:
			continue
		case <-timeout:
		}
		break
	}
	c.giveUp()
}

// release heals a partition of c that the client has not given up: the
// held bytes flow, then everything else as before.
func (c *wireConn) release() {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	// Written under the lock, so that up cannot send a newer frame first.
	_, _ = c.raw.Write(c.held)
	c.held, c.holding = nil, false
}

// deliver heals c after giveUp: the held bytes reach etcd, in order on the
// connection they were sent on; once etcd has answered the requests among
// them (the answers go nowhere), the connection closes.
func (c *wireConn) deliver() {
	c.w.t.Helper()
	c.w.mu.Lock()
	held := c.held
	c.held, c.holding = nil, false
	c.w.mu.Unlock()
	if _, err := c.raw.Write(held); err != nil {
		c.w.t.Fatalf("wire: deliver the held bytes: %v", err)
	}
	c.w.mu.Lock()
	what := fmt.Sprintf("etcd answered the held request (stream %d, %d bytes held)", c.heldStream, len(held))
	c.w.mu.Unlock()
	c.w.await(10*time.Second, what, func() bool { return c.answered })
	_ = c.raw.Close()
}

// dropReply arms c to lose the reply to the next stream the client opens
// on it: etcd gets the request and runs it; when its answer comes back, c
// closes both ways instead of passing it on.
func (c *wireConn) dropReply() {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	c.dropNext, c.dropStream = true, 0
	c.opened = map[uint32]bool{}
}

// up carries the client's bytes to etcd, frame by frame, or holds them.
func (c *wireConn) up() {
	preface := make([]byte, 24)
	if _, err := io.ReadFull(c.client, preface); err != nil {
		_ = c.raw.Close()
		return
	}
	if _, err := c.raw.Write(preface); err != nil {
		return
	}
	for {
		f, err := readFrame(c.client)
		if err != nil {
			c.w.mu.Lock()
			cut := c.cut
			c.w.mu.Unlock()
			if !cut {
				_ = c.raw.Close()
			} // else the held bytes and the TCP connection wait for deliver
			return
		}
		typ, flags, stream := f[3], f[4], binary.BigEndian.Uint32(f[5:9])&0x7fffffff
		c.w.mu.Lock()
		// A request is known by its stream: opened (HEADERS) after hold
		// or dropReply, and sent whole (DATA with END_STREAM). Streams
		// opened earlier (clientv3's long-lived keep-alive and watch
		// streams, which may open at any time) never qualify.
		if typ == frameHeaders && c.opened != nil {
			c.opened[stream] = true
		}
		whole := typ == frameData && flags&flagEnd != 0 && c.opened[stream]
		if c.dropNext && c.dropStream == 0 && whole {
			c.dropStream = stream
		}
		holding := c.holding
		if holding {
			c.held = append(c.held, f...)
			if !c.heldWhole && whole {
				c.heldStream, c.heldWhole = stream, true
				c.w.broadcastLocked()
			}
		}
		c.w.mu.Unlock()
		if !holding {
			if _, err := c.raw.Write(f); err != nil {
				_ = c.client.Close()
				return
			}
		}
	}
}

// down carries etcd's frames to the client, drops them after a giveUp, and
// loses the armed reply.
func (c *wireConn) down() {
	defer func() { _ = c.client.Close() }()
	for {
		f, err := readFrame(c.raw)
		if err != nil {
			return
		}
		typ, flags, stream := f[3], f[4], binary.BigEndian.Uint32(f[5:9])&0x7fffffff
		c.w.mu.Lock()
		cut := c.cut
		if cut {
			c.seen = append(c.seen, fmt.Sprintf("type %d flags %#x stream %d", typ, flags, stream))
		}
		if cut && stream == c.heldStream && (typ == frameHeaders && flags&flagEnd != 0 || typ == frameRST) {
			c.answered = true
			c.w.broadcastLocked()
		}
		drop := c.dropNext && c.dropStream != 0 && stream == c.dropStream
		if drop {
			c.dropNext = false
			c.w.broadcastLocked()
		}
		c.w.mu.Unlock()
		if drop {
			_ = c.raw.Close()
			return
		}
		if cut {
			continue
		}
		if _, err := c.client.Write(f); err != nil {
			c.w.mu.Lock()
			cut = c.cut
			c.w.mu.Unlock()
			if cut {
				continue // given up while this frame was on its way: keep reading for deliver
			}
			return
		}
	}
}

// readFrame reads one HTTP/2 frame: its 9-byte header and its payload.
func readFrame(r io.Reader) ([]byte, error) {
	hdr := make([]byte, 9)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, err
	}
	n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
	f := make([]byte, 9+n)
	copy(f, hdr)
	if _, err := io.ReadFull(r, f[9:]); err != nil {
		return nil, err
	}
	return f, nil
}
