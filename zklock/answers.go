package zklock

import (
	"encoding/binary"
	"net"
	"sync"
	"time"
)

// The Session watches its connection's bytes to learn when the server last
// heard from it: go-zookeeper keeps that to itself. ZooKeeper's protocol
// is a stream of frames, each a 4-byte length and a body. The client's
// first frame on a connection is the connect request, and the server's
// first is the connect response (a protocol version, the timeout granted,
// the session id); after that the server's frames carry the xid first,
// -1 for a watch event and otherwise the answer to a request. Requests
// reach the server in the order they were written (one TCP stream), so
// once the server has answered k requests it has received the first k,
// whatever the order of its answers: the k-th answer proves the server
// heard from the client after the k-th request was written. That moment
// bounds the session's expiry from below.

// notificationXid is the xid of the server's watch events, which answer
// no request.
const notificationXid = -1

// dial is go-zookeeper's dialer for the Session: a plain TCP dial, with
// the connection watched.
func (s *Session) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c, s: s}, nil
}

// watchedConn tells its Session when the server answers a request.
type watchedConn struct {
	net.Conn
	s *Session

	mu   sync.Mutex  // protects sent and out
	sent []time.Time // when each request not yet answered was written, oldest first
	out  frames      // the client's frames
	in   frames      // the server's frames; read by one goroutine at a time
	conn bool        // the connect response has been read
}

func (c *watchedConn) Write(b []byte) (int, error) {
	// Record the requests before they leave: an answer may come back
	// before Write returns.
	now := time.Now()
	c.mu.Lock()
	c.out.feed(b, func([]byte) { c.sent = append(c.sent, now) })
	c.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.in.feed(b[:n], c.frame)
	return n, err
}

// frame handles one frame from the server, given its first bytes.
func (c *watchedConn) frame(head []byte) {
	if c.conn && len(head) >= 4 && int32(binary.BigEndian.Uint32(head)) == notificationXid {
		return
	}
	c.mu.Lock()
	if len(c.sent) == 0 {
		c.mu.Unlock()
		return // an answer to nothing we wrote: it proves nothing
	}
	sent := c.sent[0]
	c.sent = c.sent[1:]
	c.mu.Unlock()
	if c.conn {
		c.s.answered(sent)
		return
	}
	c.conn = true
	if len(head) < 16 {
		return
	}
	timeout := time.Duration(int32(binary.BigEndian.Uint32(head[4:8]))) * time.Millisecond
	sid := int64(binary.BigEndian.Uint64(head[8:16]))
	c.s.sessionGranted(sent, sid, timeout)
}

// frames splits a byte stream into length-prefixed frames.
type frames struct {
	prefix  [4]byte
	nprefix int    // bytes of the prefix seen
	left    int    // bytes of the body still to come
	head    []byte // the body's first bytes, up to headLen
}

// headLen is how much of a frame's body the Session looks at.
const headLen = 16

// feed consumes b and calls done with the first bytes of each frame that
// b completes.
func (f *frames) feed(b []byte, done func(head []byte)) {
	for len(b) > 0 {
		if f.nprefix < 4 {
			k := copy(f.prefix[f.nprefix:], b)
			f.nprefix += k
			b = b[k:]
			if f.nprefix < 4 {
				return
			}
			f.left = int(binary.BigEndian.Uint32(f.prefix[:]))
			f.head = f.head[:0]
			if f.left == 0 {
				f.nprefix = 0
				done(f.head)
			}
			continue
		}
		k := min(f.left, len(b))
		if want := headLen - len(f.head); want > 0 {
			f.head = append(f.head, b[:min(want, k)]...)
		}
		f.left -= k
		b = b[k:]
		if f.left == 0 {
			f.nprefix = 0
			done(f.head)
		}
	}
}
