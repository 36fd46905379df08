package faultproxy

import (
	"context"
	"strings"
)

// Match picks the commands a [Rule] acts on. Empty fields match anything.
type Match struct {
	// Command is the command's name, such as "SET", "EVALSHA" or "RPUSH"
	// (any case). An empty Command matches every command except those that
	// set a connection up or subscribe (HELLO, AUTH, CLIENT, SELECT, PING,
	// READONLY, QUIT, RESET and the SUBSCRIBE family): a rule that loses
	// "the next command" loses a command of the protocol under test, not
	// the handshake of the connection go-redis opens to send it again.
	Command string
	// Script is the SHA-1, in hex, of the script an EVAL or EVALSHA runs
	// (redis.Script.Hash()): go-redis's Script.Run sends EVALSHA and, on
	// NOSCRIPT, EVAL with the source; both match.
	Script string
	// Key is the first key the command names: the first argument of most
	// commands, the first key of EVAL, EVALSHA and FCALL.
	Key string
}

func (m Match) matches(c command) bool {
	if m.Command == "" && setup[c.name] {
		return false
	}
	if m.Command != "" && !strings.EqualFold(m.Command, c.name) {
		return false
	}
	// A Script given without a Command matches EVAL and EVALSHA alike.
	if m.Script != "" && !strings.EqualFold(m.Script, c.script()) {
		return false
	}
	return m.Key == "" || m.Key == c.firstKey()
}

// setup are the commands an empty Match.Command leaves out.
var setup = map[string]bool{
	"HELLO": true, "AUTH": true, "CLIENT": true, "SELECT": true, "PING": true, "READONLY": true,
	"QUIT": true, "RESET": true, "SUBSCRIBE": true, "PSUBSCRIBE": true, "SSUBSCRIBE": true,
	"UNSUBSCRIBE": true, "PUNSUBSCRIBE": true, "SUNSUBSCRIBE": true,
}

type action int

const (
	count     action = iota // only count the commands
	dropReply               // deliver, then close the client's connection instead of replying
	hold                    // hold the command (and what follows it) until Release
	stall                   // freeze the command's connection both ways until Release
	dropBatch               // deliver a pipelined batch, then close the client's connection instead of replying to any of it
)

// A Rule is one fault the proxy applies to matching commands, made by
// [Proxy.DropReply], [Proxy.DropBatch], [Proxy.Hold], [Proxy.DeliverLate],
// [Proxy.Stall] or [Proxy.Count]. Rules apply in the order they were made; a command meets
// at most one fault (the first rule that matches and has uses left), and
// every counting rule it matches. Its methods are safe for concurrent use.
type Rule struct {
	p      *Proxy
	match  Match
	action action
	left   int // uses left; < 0 means no limit

	// Guarded by p.mu:
	hits     int
	skip     int // matching commands still to pass over; see After
	every    int // act on one matching command in every; see Every
	seen     int // matching commands met since the skip ran out
	released bool
	removed  bool
	caught   []string // "NAME key" of each command acted on
	answered int      // held commands the server has since run and answered
}

// Answered waits until the server has run and answered at least n of the
// commands the rule held (after [Rule.Release]), or ctx ends. A test that
// releases a late command uses it to know the command has landed.
func (r *Rule) Answered(ctx context.Context, n int) error {
	return r.p.await(ctx, func() bool { return r.answered >= n || r.p.closed })
}

// Caught returns the commands the rule has acted on, as "NAME key" (the
// command's name and first key), oldest first: what a test's failure
// message names as "the command whose reply was lost".
func (r *Rule) Caught() []string {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	return append([]string(nil), r.caught...)
}

// After makes the rule pass over the next k matching commands before it
// acts, so that a test can lose the reply of the first command, then of
// the second, and so on, of a fixed sequence: every operation in turn. It
// returns r, and must be called before the commands it counts are sent.
func (r *Rule) After(k int) *Rule {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	r.skip = max(k, 0)
	return r
}

// Every makes the rule act on one matching command in every k (the k-th,
// the 2k-th, ...), within its limit of uses. It returns r.
func (r *Rule) Every(k int) *Rule {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	r.every = max(k, 1)
	return r
}

// takes reports whether the rule acts on a command it matched, and counts
// the command towards After and Every; p.mu must be held.
func (r *Rule) takes() bool {
	if r.skip > 0 {
		r.skip--
		return false
	}
	r.seen++
	return r.every <= 1 || r.seen%r.every == 0
}

// Hits returns how many commands the rule has acted on so far.
func (r *Rule) Hits() int {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	return r.hits
}

// Wait blocks until the rule has acted on at least hits commands, or ctx
// ends (it returns ctx's error then), or the proxy is closed.
func (r *Rule) Wait(ctx context.Context, hits int) error {
	return r.p.await(ctx, func() bool { return r.hits >= hits || r.p.closed })
}

// Release lets the commands a Hold or DeliverLate rule holds go on to the
// server, and unfreezes the connections a Stall rule froze; later matching
// commands are held no more. It does nothing to other rules.
func (r *Rule) Release() {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	r.released = true
	r.p.broadcastLocked()
}

// Remove stops the rule from acting on further commands and releases what
// it holds. It is safe to call more than once.
func (r *Rule) Remove() {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	r.removed, r.released = true, true
	r.p.broadcastLocked()
}

// active reports whether the rule can still act; p.mu must be held.
func (r *Rule) active() bool { return !r.removed && r.left != 0 }

// use records one hit on c; p.mu must be held.
func (r *Rule) use(c command) {
	r.hits++
	if len(r.caught) < 64 {
		r.caught = append(r.caught, strings.TrimSpace(c.name+" "+c.firstKey()))
	}
	if r.left > 0 {
		r.left--
	}
	r.p.broadcastLocked()
}

// holding reports whether the rule still holds what it caught; p.mu must be
// held.
func (r *Rule) holding() bool { return !r.released && !r.p.closed }
