package faults

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/internal/measure"
)

// monitor reads MONITOR from one server and keeps the distinct commands
// clients sent (not those run inside scripts, not admin commands).
type monitor struct {
	conn net.Conn
	done chan struct{}
	mu   sync.Mutex
	ops  []LockOp
	seen map[LockOp]bool
}

func startMonitor(ctx context.Context, addr string) (*monitor, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	r := bufio.NewReader(conn)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		conn.Close()
		return nil, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "+OK") {
		conn.Close()
		return nil, fmt.Errorf("MONITOR: %q, %v", line, err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	m := &monitor{conn: conn, done: make(chan struct{}), seen: map[LockOp]bool{}}
	go func() {
		defer close(m.done)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if op, ok := ParseMonitorLine(line); ok {
				m.mu.Lock()
				if !m.seen[op] {
					m.seen[op] = true
					m.ops = append(m.ops, op)
				}
				m.mu.Unlock()
			}
		}
	}()
	return m, nil
}

// stop ends the monitor and returns what it saw. A moment's grace lets
// the last commands' lines arrive.
func (m *monitor) stop() []LockOp {
	time.Sleep(50 * time.Millisecond)
	_ = m.conn.Close()
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops
}

// protocolCommands are left out of a lock's commands: connection set-up,
// subscriptions and health checks, which the proxy's empty Match leaves
// alone too.
var protocolCommands = map[string]bool{
	"HELLO": true, "AUTH": true, "CLIENT": true, "SELECT": true, "PING": true, "READONLY": true, "QUIT": true, "RESET": true,
	"SUBSCRIBE": true, "UNSUBSCRIBE": true, "PSUBSCRIBE": true, "PUNSUBSCRIBE": true, "SSUBSCRIBE": true, "SUNSUBSCRIBE": true,
	"MONITOR": true,
}

// ParseMonitorLine reads one MONITOR line,
//
//	+1700000000.123456 [0 127.0.0.1:51234] "evalsha" "3f2a..." "2" "k" ...
//
// and returns the command a client sent, if it is one of a lock's.
func ParseMonitorLine(line string) (LockOp, bool) {
	open := strings.IndexByte(line, '[')
	end := strings.IndexByte(line, ']')
	if open < 0 || end < open {
		return LockOp{}, false
	}
	if strings.HasSuffix(line[open+1:end], " lua") {
		return LockOp{}, false // run by a script
	}
	args := quotedArgs(line[end+1:], 2)
	if len(args) == 0 {
		return LockOp{}, false
	}
	name := strings.ToUpper(args[0])
	if protocolCommands[name] || measure.IsAdmin(strings.ToLower(name)) {
		return LockOp{}, false
	}
	op := LockOp{Name: name}
	switch name {
	case "EVALSHA":
		if len(args) > 1 {
			op.Sha = strings.ToLower(args[1])
		}
	case "EVAL":
		if len(args) > 1 {
			sum := sha1.Sum([]byte(args[1]))
			op.Name, op.Sha = "EVALSHA", hex.EncodeToString(sum[:])
		}
	}
	return op, true
}

// quotedArgs returns up to n of the double-quoted, backslash-escaped
// arguments of a MONITOR line.
func quotedArgs(s string, n int) []string {
	var out []string
	for len(out) < n {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			return out
		}
		s = s[i+1:]
		var b strings.Builder
		j := 0
		for ; j < len(s) && s[j] != '"'; j++ {
			if s[j] != '\\' || j+1 >= len(s) {
				b.WriteByte(s[j])
				continue
			}
			j++
			switch s[j] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'x':
				if j+2 < len(s) {
					if v, err := strconv.ParseUint(s[j+1:j+3], 16, 8); err == nil {
						b.WriteByte(byte(v))
						j += 2
						continue
					}
				}
				b.WriteByte('x')
			default:
				b.WriteByte(s[j])
			}
		}
		out = append(out, b.String())
		if j >= len(s) {
			return out
		}
		s = s[j+1:]
	}
	return out
}
