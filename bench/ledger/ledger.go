// Package ledger is the speed runner's mutual-exclusion check: a shared
// occupancy counter in Redis that every holder increments on entering the
// critical section and decrements before it releases (see Ledger).
package ledger

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Ledger is the mutual-exclusion check every implementation runs under: a
// shared occupancy counter in Redis, on the first server, that each holder
// increments when it enters the critical section and decrements before it
// releases the lock. Nothing but the lock under test protects the counter:
// an INCR that returns more than 1 means another holder was inside (its
// INCR counted, its DECR not yet), and is counted as a violation.
//
// All holders' updates go over one pipelined connection, in the order the
// holders append them (under mu). A holder appends its DECR before it calls
// Unlock, and the next holder appends its INCR only after its Lock
// returned, so on this one TCP stream the server always sees the previous
// holder's DECR first: an honest hand-over never looks like an overlap,
// and any overlap of two holders' critical sections (the second INCR
// appended before the first DECR) is counted.
//
// In async mode (the default) the holder does not wait for the reply: the
// commands are written in batches (every flushEvery, or sooner when many
// are queued), so the check adds no round trip and almost no CPU to the
// critical section, and a run measures the lock rather than the check.
// The order, not the timing, is what the check relies on. In sync mode
// (-check sync) each INCR and DECR waits for its reply inside the critical
// section, as a separate process guarding a real resource would; it costs
// two round trips per acquisition.
//
// The Ledger's INCRs and DECRs reach INFO commandstats on that server; the
// bench counts them exactly (each one is answered before the run's barrier
// returns) and subtracts them from the implementation's counts. Its
// barrier is a PING, an excluded admin command.
type Ledger struct {
	conn net.Conn
	sync bool

	mu      sync.Mutex      // protects buf, queued, closed; its order is the check's order
	buf     []byte          // commands not yet written
	queued  []ledgerOp      // the ops whose commands are in buf, in order
	closed  bool            // no more ops
	kick    chan struct{}   // wakes the writer early (capacity 1)
	pending chan []ledgerOp // written batches, awaiting their replies in order
	done    chan struct{}   // closed when the reader has exited

	errMu sync.Mutex // protects err
	err   error      // first connection error; later ops fail at once
}

type opKind uint8

const (
	opEnter opKind = iota
	opExit
	opBarrier
)

type ledgerOp struct {
	kind  opKind
	tally *Tally
	reply chan error // barrier and sync-mode ops: the reply arrived (or failed)
}

// Tally is one run's view of the ledger.
type Tally struct {
	Enters, Exits atomic.Int64 // ops appended, hence INCRs and DECRs sent
	Violations    atomic.Int64 // INCR replies > 1
	Negative      atomic.Int64 // DECR replies < 0: a DECR without its INCR
	Failed        atomic.Int64 // sync mode: ops whose reply did not come
}

const (
	flushEvery  = time.Millisecond // async mode: how often queued commands are written
	flushBytes  = 32 << 10         // ... or when this much is queued
	syncTimeout = 5 * time.Second  // sync mode: the longest wait for one reply
)

// Dial connects to addr and starts the writer and reader.
func Dial(addr string, syncMode bool) (*Ledger, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	l := &Ledger{
		conn:    conn,
		sync:    syncMode,
		kick:    make(chan struct{}, 1),
		pending: make(chan []ledgerOp, 1024),
		done:    make(chan struct{}),
	}
	go l.write()
	go l.read()
	return l, nil
}

// Enter records that the caller entered the critical section of key.
func (l *Ledger) Enter(t *Tally, key string) {
	t.Enters.Add(1)
	l.add(ledgerOp{kind: opEnter, tally: t}, "INCR", key)
}

// Exit records that the caller is about to release the lock on key.
func (l *Ledger) Exit(t *Tally, key string) {
	t.Exits.Add(1)
	l.add(ledgerOp{kind: opExit, tally: t}, "DECR", key)
}

// add appends op's command; in sync mode it waits for the reply.
func (l *Ledger) add(op ledgerOp, args ...string) {
	if l.sync {
		op.reply = make(chan error, 1)
	}
	l.mu.Lock()
	l.buf = appendCommand(l.buf, args...)
	l.queued = append(l.queued, op)
	urgent := l.sync || len(l.buf) >= flushBytes
	l.mu.Unlock()
	if urgent {
		l.wake()
	}
	if op.reply != nil {
		select {
		case err := <-op.reply:
			if err != nil {
				op.tally.Failed.Add(1)
			}
		case <-time.After(syncTimeout):
			op.tally.Failed.Add(1)
		}
	}
}

func (l *Ledger) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Barrier returns once every op appended before it has been answered, or
// the connection's error.
func (l *Ledger) Barrier(timeout time.Duration) error {
	reply := make(chan error, 1)
	l.mu.Lock()
	l.buf = appendCommand(l.buf, "PING")
	l.queued = append(l.queued, ledgerOp{kind: opBarrier, reply: reply})
	l.mu.Unlock()
	l.wake()
	select {
	case err := <-reply:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("ledger: no reply from the server within %v", timeout)
	}
}

// Close stops the goroutines and closes the connection. Nothing may be
// appended afterwards.
func (l *Ledger) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.wake()
	<-l.done
	return l.conn.Close()
}

func (l *Ledger) fail(err error) {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	if l.err == nil {
		l.err = err
		_ = l.conn.SetDeadline(time.Now()) // unblock the other side
	}
}

func (l *Ledger) failed() error {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	return l.err
}

// write sends the queued commands every flushEvery, or when woken.
func (l *Ledger) write() {
	defer close(l.pending)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	var spare []byte
	for {
		select {
		case <-t.C:
		case <-l.kick:
		}
		l.mu.Lock()
		buf, ops, closed := l.buf, l.queued, l.closed
		l.buf, l.queued = spare[:0], nil
		l.mu.Unlock()
		if len(ops) > 0 {
			l.pending <- ops
			if l.failed() == nil {
				if _, err := l.conn.Write(buf); err != nil {
					l.fail(fmt.Errorf("ledger: write: %w", err))
				}
			}
		}
		spare = buf
		if closed {
			return
		}
	}
}

// read matches replies to ops, in order.
func (l *Ledger) read() {
	defer close(l.done)
	r := bufio.NewReaderSize(l.conn, 32<<10)
	for ops := range l.pending {
		for _, op := range ops {
			var n int64
			err := l.failed()
			if err == nil {
				if n, err = readReply(r); err != nil {
					err = fmt.Errorf("ledger: %w", err)
					l.fail(err)
				}
			}
			switch op.kind {
			case opEnter:
				if err == nil && n > 1 {
					op.tally.Violations.Add(1)
				}
			case opExit:
				if err == nil && n < 0 {
					op.tally.Negative.Add(1)
				}
			}
			if op.reply != nil {
				op.reply <- err
			}
		}
	}
}

// appendCommand appends one command as a RESP array of bulk strings.
func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// readReply reads one RESP reply: an integer (returned), a simple string
// (0) or an error.
func readReply(r *bufio.Reader) (int64, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 3 {
		return 0, fmt.Errorf("short reply %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '+':
		return 0, nil
	case '-':
		return 0, errors.New("server: " + body)
	default:
		return 0, fmt.Errorf("unexpected reply %q", line)
	}
}
