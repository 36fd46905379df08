package rig

import "time"

const (
	// defaultReadyTimeout bounds how long a start waits for PING to answer.
	defaultReadyTimeout = 10 * time.Second
	// defaultClientTimeout is the dial/read/write timeout of clients made by
	// [Node.Client].
	defaultClientTimeout = 2 * time.Second
	// procMarker is put in every server's process title; [Strays] looks for it.
	procMarker = "locklab-rig"
)

// Option configures a node started by [Start] or [New].
type Option func(*config)

type config struct {
	aof          bool
	args         []string
	readyTimeout time.Duration
	server       string // "redis" or "valkey" as WithServer names it; "" the provider's choice
}

func newConfig(opts []Option) config {
	c := config{readyTimeout: defaultReadyTimeout}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// serverArgs returns the redis-server arguments c asks for under every
// provider: no RDB snapshots, the append-only file as [WithAOF] sets it
// (fsynced on every write), and replicas that sync at once rather than
// after 5s.
func (c config) serverArgs() []string {
	aof := "no"
	if c.aof {
		aof = "yes"
	}
	return []string{
		"--save", "",
		"--appendonly", aof,
		"--appendfsync", "always",
		"--repl-diskless-sync-delay", "0",
	}
}

// WithAOF turns on the append-only file with appendfsync always, so every
// acknowledged write is on disk before the reply and survives SIGKILL and
// [Node.Restart] with keepData. The default is no persistence at all.
func WithAOF() Option { return func(c *config) { c.aof = true } }

// WithArgs appends raw redis-server arguments, for example
// WithArgs("--maxmemory", "10mb"). The default is none.
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// WithServer starts the node from the binary of the named kind of server,
// "redis" (redis-server) or "valkey" (valkey-server), found on PATH,
// whatever LOCKLAB_SERVER and LOCKLAB_REDIS_SERVER say, so that one process
// can run both kinds side by side (the bench's -server redis,valkey). It
// needs the exec provider: with LOCKLAB_REDIS_ADDRS set or a provider other
// than exec forced, and for any other kind, starting the node is an error.
// The default is the server the provider chooses for the whole process.
func WithServer(kind string) Option { return func(c *config) { c.server = kind } }
