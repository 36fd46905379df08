package zklock_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/faultproxy"
)

// ZooKeeper's opcodes, as go-zookeeper sends them (its constants are
// unexported).
const (
	opCreate = 1
	opDelete = 2
)

// wire is a proxy that reads ZooKeeper's protocol, for the one fault the
// byte-level faultproxy cannot time: a request delivered to the server
// whose reply is lost (the proxy resets the client's connection instead of
// forwarding the reply), as when a connection drops right after the
// request was sent. go-zookeeper does not send a request again.
//
// Point a client at Addr; wire forwards to its target whole frames (a
// 4-byte length, then the frame), the first each way being the connect
// request and response, the others carrying the xid first and, for
// requests, the opcode.
type wire struct {
	target string
	ln     net.Listener

	mu           sync.Mutex // protects the fields below
	rules        []*dropRule
	links        map[*wireLink]struct{}
	replyLatency time.Duration

	wg sync.WaitGroup // the accept loop and the links' goroutines
}

// dropRule loses the reply to the next request with its opcode whose
// path (the first field of a create or a delete) contains part.
type dropRule struct {
	op    int32
	part  string
	used  bool
	fired chan struct{} // closed once the reply has been lost
}

// matches reports whether the request frame f (length prefix included)
// has r's opcode and a path containing r's part.
func (r *dropRule) matches(op int32, f []byte) bool {
	if r.used || r.op != op {
		return false
	}
	if r.part == "" {
		return true
	}
	if len(f) < 16 {
		return false
	}
	n := int(binary.BigEndian.Uint32(f[12:16]))
	return n >= 0 && 16+n <= len(f) && strings.Contains(string(f[16:16+n]), r.part)
}

type wireLink struct {
	client, server net.Conn
	once           sync.Once
	mu             sync.Mutex
	drop           map[int32]*dropRule // xid -> the rule losing its reply
}

func (l *wireLink) close() {
	l.once.Do(func() {
		if tc, ok := l.client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // RST: the client sees its connection reset
		}
		_ = l.client.Close()
		_ = l.server.Close()
	})
}

// startWire starts a wire to target, closed when the test ends.
func startWire(t testing.TB, target string) *wire {
	t.Helper()
	w, err := newWire(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	return w
}

// newWire starts a wire to target; the caller must close it.
func newWire(target string) (*wire, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	w := &wire{target: target, ln: ln, links: map[*wireLink]struct{}{}}
	w.wg.Add(1)
	go w.accept()
	return w, nil
}

// Addr returns the address clients dial.
func (w *wire) Addr() string { return w.ln.Addr().String() }

// DropReply loses the reply to the next request with opcode op (on any
// connection) whose path contains part (any path if part is ""): the
// server runs it, and the client's connection is reset when the reply
// comes back. The returned channel closes then.
func (w *wire) DropReply(op int32, part string) <-chan struct{} {
	r := &dropRule{op: op, part: part, fired: make(chan struct{})}
	w.mu.Lock()
	w.rules = append(w.rules, r)
	w.mu.Unlock()
	return r.fired
}

func (w *wire) close() {
	_ = w.ln.Close()
	w.mu.Lock()
	for l := range w.links {
		l.close()
	}
	w.mu.Unlock()
	w.wg.Wait()
}

func (w *wire) accept() {
	defer w.wg.Done()
	for {
		c, err := w.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.DialTimeout("tcp", w.target, 2*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		l := &wireLink{client: c, server: s, drop: map[int32]*dropRule{}}
		w.mu.Lock()
		w.links[l] = struct{}{}
		w.mu.Unlock()
		w.wg.Add(2)
		go w.up(l)
		go w.down(l)
	}
}

func (w *wire) forget(l *wireLink) {
	l.close()
	w.mu.Lock()
	delete(w.links, l)
	w.mu.Unlock()
}

// up forwards the client's requests, noting those whose reply is to be
// lost.
func (w *wire) up(l *wireLink) {
	defer w.wg.Done()
	defer w.forget(l)
	for first := true; ; first = false {
		f, err := readFrame(l.client)
		if err != nil {
			return
		}
		if !first && len(f) >= 12 {
			xid := int32(binary.BigEndian.Uint32(f[4:8]))
			op := int32(binary.BigEndian.Uint32(f[8:12]))
			w.mu.Lock()
			for _, r := range w.rules {
				if r.matches(op, f) {
					r.used = true
					l.mu.Lock()
					l.drop[xid] = r
					l.mu.Unlock()
					break
				}
			}
			w.mu.Unlock()
		}
		if _, err := l.server.Write(f); err != nil {
			return
		}
	}
}

// SetReplyLatency delays every frame from the server to the client by d
// (requests go on at once), as a slow return path does. Frames already on
// their way keep their delay.
func (w *wire) SetReplyLatency(d time.Duration) {
	w.mu.Lock()
	w.replyLatency = d
	w.mu.Unlock()
}

// reply is a frame from the server and when it is due at the client.
type reply struct {
	f   []byte
	due time.Time
}

// down forwards the server's replies, each once its reply latency has
// passed, but resets the client's connection in place of a reply to be
// lost.
func (w *wire) down(l *wireLink) {
	defer w.wg.Done()
	defer w.forget(l)
	q := make(chan reply, 1024)
	w.wg.Add(1)
	go func() { // read and date the frames, so that delays do not add up
		defer w.wg.Done()
		defer close(q)
		for {
			f, err := readFrame(l.server)
			if err != nil {
				return
			}
			w.mu.Lock()
			d := w.replyLatency
			w.mu.Unlock()
			select {
			case q <- reply{f, time.Now().Add(d)}:
			default:
				l.close() // the client does not read: give up on it
				return
			}
		}
	}()
	defer func() {
		l.close()
		for range q { // let the reader end
		}
	}()
	for first := true; ; first = false {
		r, ok := <-q
		if !ok {
			return
		}
		time.Sleep(time.Until(r.due))
		f := r.f
		if !first && len(f) >= 8 {
			xid := int32(binary.BigEndian.Uint32(f[4:8]))
			l.mu.Lock()
			rule := l.drop[xid]
			l.mu.Unlock()
			if rule != nil {
				l.close()
				close(rule.fired)
				return
			}
		}
		if _, err := l.client.Write(f); err != nil {
			return
		}
	}
}

// readFrame reads one length-prefixed frame, prefix included.
func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 16<<20 {
		return nil, errors.New("wire: frame too large")
	}
	f := make([]byte, 4+size)
	copy(f, n[:])
	_, err := io.ReadFull(r, f[4:])
	return f, err
}

// faulty is a client's path to a ZooKeeper server: the client dials the
// wire, which forwards to the byte-level fault proxy, which forwards to
// the server.
type faulty struct {
	wire  *wire
	proxy *faultproxy.Proxy
}

// faultyPath starts a faulty path to the server at addr.
func faultyPath(t testing.TB, addr string) faulty {
	t.Helper()
	p := faultproxy.Start(t, addr)
	return faulty{wire: startWire(t, p.Addr()), proxy: p}
}

// Addr returns the address a client on this path dials.
func (f faulty) Addr() string { return f.wire.Addr() }
