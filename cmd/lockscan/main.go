// Command lockscan looks through a Redis for lock keys and reports those
// without a TTL: possible leaked locks, which nobody will ever acquire
// again (a holder that died between SETNX and EXPIRE, a PERSIST by hand).
// It also reports the distribution of the locks' remaining TTLs, who holds
// each lock (a string key's token; a hash key's owners and counts, as
// package reentrant and Redisson store them), and the reentrant counts.
//
// It walks the keyspace with SCAN MATCH pattern COUNT n, never KEYS, so it
// does not block the server, and inspects each batch in two pipelined
// round trips. It is meant for a cron job or a monitoring probe:
//
//	lockscan -addr 127.0.0.1:7101                 # text report
//	lockscan -url rediss://ops:secret@redis.internal:6380/0 -json
//	LOCKSCAN_URL=redis://... lockscan -cluster    # every primary of a cluster
//
// It also reports, per server, whether the server may evict keys under
// memory pressure (INFO memory: maxmemory and maxmemory-policy), which
// deletes a held lock without telling anyone.
//
// Exit status: 0 when no key without a TTL was found and no server evicts,
// 3 when a key without a TTL was found (the alert), 4 when none was but a
// server may evict keys, 1 on an error (the server cannot be reached, a
// command is refused), 2 on a usage error. See README.md for the flags, the JSON
// schema and the ACL the command needs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	exitLeaks = 3
	// exitEvicts: no leak, but a server may evict lock keys.
	exitEvicts = 4
)

const (
	defaultPattern = "lock:*"
	// defaultExclude skips fencing token counters, which package fencing
	// never deletes by design (tokens must keep growing): without a TTL,
	// but not leaked.
	defaultExclude = "*:fence"
	defaultCount   = 1000
	defaultLimit   = 100
	defaultTimeout = 5 * time.Minute
	// clientTimeout bounds each command's dial, write and read.
	clientTimeout = 5 * time.Second
	// urlEnv names the environment variable read when neither -addr nor
	// -url is given, so that a password stays out of the process list.
	urlEnv = "LOCKSCAN_URL"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is the parsed command line.
type config struct {
	addr, url string
	cluster   bool
	json      bool
	timeout   time.Duration
	opts      options
}

// usageError is a bad command line; run reports it with exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func parseArgs(args []string, getenv func(string) string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("lockscan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: lockscan (-addr host:port | -url redis://...) [flags]\n\n"+
			"Scans a Redis with SCAN (never KEYS) for lock keys and reports those without a TTL\n"+
			"(possible leaked locks), the TTL distribution, the holders and whether each server evicts\n"+
			"keys. Exit status: 0 all well, 3 leaks found, 4 a server evicts, 1 error, 2 usage.\n"+
			"Without -addr and -url, $%s is used.\n\nFlags:\n", urlEnv)
		fs.PrintDefaults()
	}
	c := &config{}
	var exclude string
	fs.StringVar(&c.addr, "addr", "", "Redis `host:port` to scan (plain TCP, no password)")
	fs.StringVar(&c.url, "url", "", "Redis `URL`: redis://[user:password@]host:port[/db] or rediss:// for TLS (default $"+urlEnv+")")
	fs.BoolVar(&c.cluster, "cluster", false, "the target is a Redis Cluster node: scan every primary")
	fs.StringVar(&c.opts.pattern, "pattern", defaultPattern, "SCAN MATCH `pattern` of lock keys")
	fs.StringVar(&exclude, "exclude", defaultExclude, "comma-separated `patterns` (* and ?) of matching keys to skip; \"\" skips none")
	fs.Int64Var(&c.opts.count, "count", defaultCount, "SCAN COUNT hint: keys examined per round trip")
	fs.IntVar(&c.opts.limit, "limit", defaultLimit, "most locks listed in the report, leaked first (0 = all); counts cover every key")
	fs.BoolVar(&c.json, "json", false, "print the report as JSON (schema "+Schema+", see README.md)")
	fs.DurationVar(&c.timeout, "timeout", defaultTimeout, "give up after this long")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Sprintf("unexpected arguments %q (flags only)", fs.Args())}
	}
	if c.addr == "" && c.url == "" {
		c.url = getenv(urlEnv)
	}
	switch {
	case c.addr != "" && c.url != "":
		return nil, usageError{"give -addr or -url, not both"}
	case c.addr == "" && c.url == "":
		return nil, usageError{"no server: give -addr host:port or -url redis://..., or set $" + urlEnv}
	case c.opts.pattern == "":
		return nil, usageError{"-pattern is empty"}
	case c.opts.count < 1:
		return nil, usageError{fmt.Sprintf("-count %d: want at least 1", c.opts.count)}
	case c.opts.limit < 0:
		return nil, usageError{fmt.Sprintf("-limit %d: want 0 (all) or more", c.opts.limit)}
	case c.timeout <= 0:
		return nil, usageError{fmt.Sprintf("-timeout %v: want more than 0", c.timeout)}
	}
	for _, p := range strings.Split(exclude, ",") {
		if p = strings.TrimSpace(p); p != "" {
			c.opts.exclude = append(c.opts.exclude, p)
		}
	}
	return c, nil
}

// run is the whole command: it parses args, scans, prints the report to
// stdout (errors to stderr) and returns the exit status.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c, err := parseArgs(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "lockscan: %s (see -h)\n", ue.msg)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	target, servers, closeAll, err := connect(ctx, c)
	if err != nil {
		fmt.Fprintf(stderr, "lockscan: %v\n", err)
		return exitError
	}
	defer closeAll()
	r, err := scan(ctx, target, servers, c.opts)
	if err != nil {
		fmt.Fprintf(stderr, "lockscan: %s: %v\n", target, err)
		return exitError
	}
	if c.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // "<1s", not "\u003c1s"
		err = enc.Encode(r)
	} else {
		err = writeText(stdout, r)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lockscan: write report: %v\n", err)
		return exitError
	}
	switch {
	case r.Leaked > 0:
		return exitLeaks
	case r.Evicting > 0:
		return exitEvicts
	}
	return exitOK
}

// connect makes the clients to scan: one for a single server, one per
// primary for a cluster. target names what is scanned, without password.
func connect(ctx context.Context, c *config) (target string, servers []scanner, closeAll func(), err error) {
	if c.cluster {
		return connectCluster(ctx, c)
	}
	var opt *redis.Options
	if c.url != "" {
		if opt, err = redis.ParseURL(c.url); err != nil {
			return "", nil, nil, fmt.Errorf("-url: %w", urlError(err))
		}
		target = redact(c.url)
	} else {
		opt, target = &redis.Options{Addr: c.addr}, c.addr
	}
	timeouts(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout)
	opt.ContextTimeoutEnabled = true
	if opt.DialerRetries == 0 {
		opt.DialerRetries = 1 // a server that refuses is reported at once
	}
	rc := redis.NewClient(opt)
	return target, []scanner{rc}, func() { _ = rc.Close() }, nil
}

func connectCluster(ctx context.Context, c *config) (string, []scanner, func(), error) {
	var opt *redis.ClusterOptions
	target := c.addr
	if c.url != "" {
		var err error
		if opt, err = redis.ParseClusterURL(c.url); err != nil {
			return "", nil, nil, fmt.Errorf("-url: %w", urlError(err))
		}
		target = redact(c.url)
	} else {
		opt = &redis.ClusterOptions{Addrs: []string{c.addr}}
	}
	timeouts(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout)
	opt.ContextTimeoutEnabled = true
	if opt.DialerRetries == 0 {
		opt.DialerRetries = 1
	}
	cc := redis.NewClusterClient(opt)
	var (
		mu      sync.Mutex // protects servers
		servers []scanner
	)
	err := cc.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		servers = append(servers, m)
		return nil
	})
	if err != nil {
		_ = cc.Close()
		return "", nil, nil, fmt.Errorf("cluster %s: %w", target, err)
	}
	return "cluster " + target, servers, func() { _ = cc.Close() }, nil
}

// timeouts sets each timeout left at zero to clientTimeout.
func timeouts(ds ...*time.Duration) {
	for _, d := range ds {
		if *d == 0 {
			*d = clientTimeout
		}
	}
}

// urlError drops the URL, which may hold a password, from a URL parse
// error (net/url quotes the whole URL in its errors).
func urlError(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// redact returns rawURL with its password replaced by "xxxxx".
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
