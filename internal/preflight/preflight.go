// Package preflight checks, before a lock is taken on a server, two
// hazards of the environment that no script can work around:
//
//   - Eviction. With maxmemory set and a maxmemory-policy other than
//     noeviction, Redis deletes keys under memory pressure: allkeys-* any
//     key, volatile-* any key with a TTL, which every lock key has. A lock
//     key evicted while held lets a second client in, and nobody is told;
//     fencing's counter evicted makes tokens go back. The check reads
//     maxmemory and maxmemory_policy from INFO memory, which managed
//     services allow where they rename or forbid CONFIG (and where the
//     default policy is often volatile-lru), and which shows no secrets,
//     unlike CONFIG GET. A user or server that refuses INFO skips the
//     check: it cannot see.
//   - Scripting rights. A user whose ACL lets it SET but not run scripts
//     (EVALSHA, EVAL) could take a lock it can never release: it would
//     stay for a whole TTL. The check runs the lock's own release script
//     once with a token nobody holds, which changes nothing.
//
// Locks refuse a server that evicts, rather than warn: a lock that can
// vanish silently is not mutual exclusion, and a warning in a log is read
// after the incident. A caller who has weighed it (keys in a database of
// their own with memory to spare, say) turns the check off with the lock's
// WithEvictionCheck(false). The scripting check cannot be turned off.
//
// Results are remembered per server for [Interval], so the check costs two
// round trips per server a minute, not per Lock.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ProbeToken is the token (owner, value) a lock's probe releases or asks
// about: nobody holds it, so the script reads the key and changes nothing.
const ProbeToken = "preflight-probe"

// Interval is how long a server's result is remembered.
const Interval = time.Minute

// maxRemembered bounds the table of results; past it the table starts
// afresh (a process talking to that many servers re-checks a little more).
const maxRemembered = 4096

// ErrEviction is wrapped by the error for a server that may evict keys.
var ErrEviction = errors.New("the server evicts keys under memory pressure, lock keys included")

// ErrNoScripting is wrapped by the error for a user that may not run the
// lock's scripts.
var ErrNoScripting = errors.New("the user may not run the lock's scripts")

// infoer is the optional part of a client that lets the eviction check
// run: *redis.Client and *redis.ClusterClient have it.
type infoer interface {
	Info(ctx context.Context, section ...string) *redis.StringCmd
}

// Check returns nil, or an error saying why a lock should not be taken
// through client: it evicts (unless evictionCheck is false), or probe, the
// lock's harmless script run, is refused by the ACL. Transport errors are
// returned as they are (the caller's operation would meet them too).
// pkg prefixes the messages ("correct").
func Check(ctx context.Context, pkg string, client any, evictionCheck bool, probe func(context.Context) error) error {
	id, comparable := identity(client)
	if comparable {
		if cached, ok := remembered(id, evictionCheck, time.Now()); ok {
			return cached
		}
	}
	err := check(ctx, pkg, client, evictionCheck, probe)
	if comparable && (err == nil || errors.Is(err, ErrEviction) || errors.Is(err, ErrNoScripting)) {
		remember(id, evictionCheck, err)
	}
	return err
}

// Remembered returns the result a Check of client has remembered, and
// false when a Check would ask the server (no result, or one older than
// [Interval]). It sends nothing: a lock on several servers reads it first
// and starts checks only for servers that need one.
func Remembered(client any, evictionCheck bool) (error, bool) {
	id, comparable := identity(client)
	if !comparable {
		return nil, false
	}
	return remembered(id, evictionCheck, time.Now())
}

func check(ctx context.Context, pkg string, client any, evictionCheck bool, probe func(context.Context) error) error {
	if evictionCheck {
		if cc, ok := client.(*redis.ClusterClient); ok {
			// Every primary, not the one node go-redis picks for INFO:
			// a key lives on its slot's primary, which may be the one
			// that evicts.
			if err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
				return eviction(ctx, pkg, c)
			}); err != nil {
				return err
			}
		} else if in, ok := client.(infoer); ok {
			if err := eviction(ctx, pkg, in); err != nil {
				return err
			}
		}
	}
	if err := probe(ctx); err != nil && !errors.Is(err, redis.Nil) {
		if isNoPerm(err) {
			return fmt.Errorf("%s: %w: %v; grant the user +evalsha +eval and the commands and keys of its scripts (see the package doc)", pkg, ErrNoScripting, err)
		}
		return err
	}
	return nil
}

func eviction(ctx context.Context, pkg string, in infoer) error {
	info, err := askInfo(ctx, in, "memory")
	if err != nil {
		if isNoPerm(err) || isUnknownCommand(err) {
			return nil // the server will not say; the check cannot see
		}
		return err
	}
	limit, policy := Memory(info)
	if !Evicts(limit, policy) {
		return nil
	}
	return fmt.Errorf("%s: %w (maxmemory %d bytes, maxmemory-policy %s): a lock key evicted while held lets a second holder in, unseen; "+
		"set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction), or, having weighed it, pass WithEvictionCheck(false)",
		pkg, ErrEviction, limit, policy)
}

// Memory reads maxmemory (bytes; 0 for no limit) and maxmemory_policy
// from the text of INFO memory.
func Memory(info string) (limit int64, policy string) {
	for _, line := range strings.Split(info, "\n") {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		switch {
		case !ok:
		case name == "maxmemory":
			limit, _ = strconv.ParseInt(value, 10, 64)
		case name == "maxmemory_policy":
			policy = value
		}
	}
	return limit, policy
}

// Evicts reports whether a server with this maxmemory and policy deletes
// keys under memory pressure: with a limit, every policy but noeviction
// does, and every lock key has a TTL, so volatile-* policies take them too.
func Evicts(limit int64, policy string) bool {
	return limit > 0 && policy != "" && policy != "noeviction"
}

func isNoPerm(err error) bool { return strings.HasPrefix(err.Error(), "NOPERM") }

func isUnknownCommand(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "ERR unknown command") || strings.Contains(s, "unknown subcommand")
}

// ident names the server and user behind a client: its address and user
// name when the client says, else the client value itself. The user
// matters as well as the server: scripting rights are the user's. (A
// struct, not a joined string: looking a result up allocates nothing.)
type ident struct {
	addr, user string
	client     any
}

// identity returns client's ident. It reports false for a client value
// that cannot be a map key (results are then not remembered).
func identity(client any) (ident, bool) {
	if b, ok := client.(*boundedPipeliner); ok { // see Bound: no reflection per Lock
		return ident{client: b.AutoPipeliner}, true
	}
	if o, ok := client.(interface{ Options() *redis.Options }); ok {
		opt := o.Options()
		return ident{addr: opt.Addr, user: opt.Username}, true
	}
	if o, ok := client.(interface{ Options() *redis.ClusterOptions }); ok {
		opt := o.Options()
		return ident{addr: strings.Join(opt.Addrs, ","), user: opt.Username}, true
	}
	if client == nil || !reflect.ValueOf(client).Comparable() {
		return ident{}, false
	}
	return ident{client: client}, true
}

type result struct {
	err error
	at  time.Time
}

type cacheKey struct {
	id       ident
	eviction bool
}

var (
	mu      sync.Mutex // protects results
	results = map[cacheKey]result{}
)

// remembered returns the result remembered for id, and false when there
// is none or it is older than Interval at now.
func remembered(id ident, eviction bool, now time.Time) (error, bool) {
	mu.Lock()
	r, ok := results[cacheKey{id, eviction}]
	mu.Unlock()
	if !ok || now.Sub(r.at) > Interval {
		return nil, false
	}
	return r.err, true
}

func remember(id ident, eviction bool, err error) {
	mu.Lock()
	defer mu.Unlock()
	if len(results) >= maxRemembered {
		clear(results)
	}
	results[cacheKey{id, eviction}] = result{err: err, at: time.Now()}
}

// Forget drops every remembered result, for tests that change a server's
// configuration between two locks.
func Forget() {
	mu.Lock()
	defer mu.Unlock()
	clear(results)
}

// ErrCluster is wrapped by the error for a Notifier asked to work through
// a Redis Cluster.
var ErrCluster = errors.New("the server is a Redis Cluster node")

// Clustered reports whether client reaches a Redis Cluster: a
// *redis.ClusterClient, or any client whose server says cluster_enabled:1
// in INFO cluster (the AutoPipeliner of a ClusterClient, whose type does
// not say). A client that cannot run INFO, or a server that refuses it,
// is taken as not clustered: the check cannot see. Transport errors are
// returned.
//
// A lock's Notifier refuses a cluster: the hand-off script's PUBLISH
// counts only the subscribers of the key's node, so a waiter subscribed
// through another node is passed by as gone, while the cluster still
// delivers it the message, and it would take the lock beside the one it
// was passed to.
func Clustered(ctx context.Context, client any) (bool, error) {
	if _, ok := client.(*redis.ClusterClient); ok {
		return true, nil
	}
	in, ok := client.(infoer)
	if !ok {
		return false, nil
	}
	info, err := askInfo(ctx, in, "cluster")
	if err != nil {
		if isNoPerm(err) || isUnknownCommand(err) {
			return false, nil
		}
		return false, err
	}
	for _, line := range strings.Split(info, "\n") {
		if strings.TrimSpace(line) == "cluster_enabled:1" {
			return true, nil
		}
	}
	return false, nil
}

// askInfo runs INFO section, and once more after a transport error: a
// reply lost on a client whose retries are off (a ClusterClient's node
// clients never resend; the ClusterClient does, for its own commands) is
// asked again, as go-redis would on its defaults. Refusals are answers.
func askInfo(ctx context.Context, in infoer, section string) (string, error) {
	info, err := in.Info(ctx, section).Result()
	if err != nil && !isNoPerm(err) && !isUnknownCommand(err) && ctx.Err() == nil {
		info, err = in.Info(ctx, section).Result()
	}
	return info, err
}
