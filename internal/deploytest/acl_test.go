package deploytest_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
)

const (
	// adminPassword is the default user's password (requirepass).
	adminPassword = "admin-Secret1"
	// urlParams are the client settings carried in every URL: the rig's
	// timeouts, and no retries (a lock must see every failure).
	urlParams = "dial_timeout=2s&read_timeout=2s&write_timeout=2s&max_retries=-1"
)

var keyN atomic.Int64

// newKey returns a key unique to this test run, under "lock:".
func newKey(name string) string { return fmt.Sprintf("lock:deploy:%s:%d", name, keyN.Add(1)) }

func userOf(k kind) string     { return "locker-" + k.name }
func passwordOf(k kind) string { return "pw-" + k.name + "-Secret1" }

// lockURL is the URL a deployment would configure for kind k's user.
func lockURL(scheme, addr string, k kind) string {
	u := url.URL{Scheme: scheme, User: url.UserPassword(userOf(k), passwordOf(k)), Host: addr, Path: "/0", RawQuery: urlParams}
	return u.String()
}

// clientFromURL parses rawURL with redis.ParseURL, as a deployment would,
// and makes a client closed at the end of the test. adjust, when given,
// completes the options (TLS roots).
func clientFromURL(t *testing.T, rawURL string, adjust func(*redis.Options)) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		t.Fatalf("redis.ParseURL(%q) = %v", rawURL, err)
	}
	opt.ContextTimeoutEnabled = true // not expressible in a URL
	if adjust != nil {
		adjust(opt)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// secure gives each kind its ACL user on node, then requires a password
// for the default user, and returns a client logged in as the admin.
func secure(t *testing.T, ctx context.Context, node *rig.Node, ks []kind) *redis.Client {
	t.Helper()
	c := node.Client()
	for _, k := range ks {
		args := []any{"ACL", "SETUSER", userOf(k), "reset", "on", ">" + passwordOf(k)}
		for _, r := range k.acl {
			args = append(args, r)
		}
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("ACL SETUSER %s on %s = %v", userOf(k), node.Addr(), err)
		}
	}
	if err := c.ConfigSet(ctx, "requirepass", adminPassword).Err(); err != nil {
		t.Fatalf("CONFIG SET requirepass on %s = %v", node.Addr(), err)
	}
	admin := clientFromURL(t, "redis://default:"+adminPassword+"@"+node.Addr()+"/0?"+urlParams, nil)
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Fatalf("admin PING on %s = %v", node.Addr(), err)
	}
	return admin
}

// deniedFor returns what ACL LOG on admin's server recorded as denied to
// user, as "reason:object" strings ("command:lpop", "key:{lock:x}:q").
func deniedFor(ctx context.Context, admin *redis.Client, user string) ([]string, error) {
	entries, err := admin.ACLLog(ctx, 128).Result()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		// go-redis sends CLIENT SETINFO on connect and ignores a refusal;
		// Redis 7.2+ logs it (7.0 has no such command).
		if e.Username == user && e.Object != "client|setinfo" {
			out = append(out, e.Reason+":"+e.Object)
		}
	}
	return out, nil
}

// exerciseAsUser runs kind k's lock as its ACL user on two sides, each
// with a client per node of the kind made from urlOf(i) and adjusted by
// adjust (see clientFromURL), once per key the kind locks (see exercise).
// Then it checks that ACL LOG on each of those nodes, through admins[i],
// records nothing denied to the user: the kind's acl list is enough.
func exerciseAsUser(t *testing.T, ctx context.Context, k kind, admins []*redis.Client, urlOf func(i int) string, adjust func(*redis.Options)) {
	t.Helper()
	side := func() []redis.UniversalClient {
		cs := make([]redis.UniversalClient, k.nodes)
		for i := range cs {
			cs[i] = clientFromURL(t, urlOf(i), adjust)
		}
		return cs
	}
	a, b := side(), side()
	for range max(k.keys, 1) {
		if err := exercise(ctx, k, a, b, admins[0], newKey(k.name), true); err != nil {
			t.Error(err)
			break
		}
	}
	for _, admin := range admins[:k.nodes] {
		addr := admin.Options().Addr
		denied, err := deniedFor(ctx, admin, userOf(k))
		if err != nil {
			t.Fatalf("ACL LOG on %s = %v", addr, err)
		}
		if len(denied) > 0 {
			t.Errorf("ACL LOG on %s: denied to %s: %q; want nothing (add it to the kind's acl)", addr, userOf(k), denied)
		}
	}
}

// TestACLUserWithPassword runs every lock package against rig-started
// servers that require a password, each package logged in through a
// redis:// URL as its own ACL user allowed only the commands and keys in
// its kind's acl list. It checks that the locks work, that ACL LOG records
// nothing denied to them (the list is enough), and that the server really
// refuses what the list leaves out.
func TestACLUserWithPassword(t *testing.T) {
	nodes := rig.StartN(t, 3) // redlock needs three independent servers
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	admins := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		admins[i] = secure(t, ctx, n, kinds)
	}

	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			exerciseAsUser(t, ctx, k, admins, func(i int) string { return lockURL("redis", nodes[i].Addr(), k) }, nil)
		})
	}

	// The limits hold: without a password nothing works, a wrong one is
	// refused, and a lock user can run neither other commands nor touch
	// other keys.
	addr := nodes[0].Addr()
	anon := clientFromURL(t, "redis://"+addr+"/0?"+urlParams, nil)
	if err := anon.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("PING without a password = %v; want NOAUTH", err)
	}
	bad := clientFromURL(t, "redis://"+userOf(kinds[0])+":wrong@"+addr+"/0?"+urlParams, nil)
	if err := bad.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("PING with a wrong password = %v; want WRONGPASS", err)
	}
	locker := clientFromURL(t, lockURL("redis", addr, kinds[0]), nil)
	if err := locker.FlushAll(ctx).Err(); !isNoPerm(err) {
		t.Errorf("FLUSHALL as %s = %v; want NOPERM", userOf(kinds[0]), err)
	}
	if err := locker.Set(ctx, "orders:1001", "x", time.Second).Err(); !isNoPerm(err) {
		t.Errorf("SET outside lock:* as %s = %v; want NOPERM", userOf(kinds[0]), err)
	}
	if _, _, err := locker.Scan(ctx, 0, "*", 10).Result(); !isNoPerm(err) {
		t.Errorf("SCAN as %s = %v; want NOPERM", userOf(kinds[0]), err)
	}
}

// TestACLCorrectNotifier runs package correct's hand-off path (a Notifier
// per client, waiters queued and handed the lock over Pub/Sub) as the
// correct user, whose ACL must cover the Notifier's SUBSCRIBE, the queue
// and the PUBLISH to waiters' channels.
func TestACLCorrectNotifier(t *testing.T) {
	node := rig.Start(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	k := kinds[0]
	if k.name != "correct" {
		t.Fatalf("kinds[0] = %s; want correct", k.name)
	}
	admin := secure(t, ctx, node, []kind{k})
	key := newKey("notify")
	var locks []locktest.Locker
	for range 2 {
		c := clientFromURL(t, lockURL("redis", node.Addr(), k), nil)
		n, err := correct.NewNotifier(ctx, c)
		if err != nil {
			t.Fatalf("NewNotifier as %s = %v", userOf(k), err)
		}
		t.Cleanup(func() { _ = n.Close() })
		locks = append(locks, correct.New(c, key, correct.WithNotifier(n)))
	}
	most, _, err := locktest.Turns(ctx, locks, contendRounds, 0)
	if err != nil {
		t.Errorf("with a Notifier: %v", err)
	}
	if most > 1 {
		t.Errorf("%d holders at once with hand-off; want 1", most)
	}
	if denied, err := deniedFor(ctx, admin, userOf(k)); err != nil || len(denied) > 0 {
		t.Errorf("ACL LOG: denied to %s: %q, %v; want nothing", userOf(k), denied, err)
	}
}

// TestACLDiscover finds, for each lock package, the commands its user
// needs: it starts from a user allowed no command, runs the package, adds
// what ACL LOG reports denied, and repeats until the package works; then it
// logs the list. It only runs when LOCKLAB_ACL_DISCOVER=1, as a tool for
// maintainers changing a package's scripts:
//
//	LOCKLAB_ACL_DISCOVER=1 go test -v -run ACLDiscover ./internal/deploytest/
func TestACLDiscover(t *testing.T) {
	if os.Getenv("LOCKLAB_ACL_DISCOVER") != "1" {
		t.Skip("a maintainer's tool: set LOCKLAB_ACL_DISCOVER=1 to run it")
	}
	nodes := rig.StartN(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for _, base := range kinds {
		k := base
		k.acl = []string{"~*", "&*", "-@all"}
		var found []string
		for range 30 {
			admins := make([]*redis.Client, k.nodes)
			for i := range admins {
				c := nodes[i].Client()
				args := []any{"ACL", "SETUSER", userOf(k), "reset", "on", ">" + passwordOf(k)}
				for _, r := range append(k.acl, found...) {
					args = append(args, r)
				}
				if err := c.Do(ctx, args...).Err(); err != nil {
					t.Fatal(err)
				}
				_ = c.Do(ctx, "ACL", "LOG", "RESET").Err()
				admins[i] = c
			}
			side := func() []redis.UniversalClient {
				cs := make([]redis.UniversalClient, k.nodes)
				for i := range cs {
					cs[i] = clientFromURL(t, lockURL("redis", nodes[i].Addr(), k), nil)
				}
				return cs
			}
			var runErr error
			for range max(k.keys, 1) {
				if runErr = exercise(ctx, k, side(), side(), nodes[0].Client(), newKey(k.name), true); runErr != nil {
					break
				}
			}
			var more []string
			for _, c := range admins {
				entries, err := c.ACLLog(ctx, 128).Result()
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					if e.Username == userOf(k) && e.Reason == "command" && !slices.Contains(found, "+"+e.Object) && !slices.Contains(more, "+"+e.Object) {
						more = append(more, "+"+e.Object)
					}
				}
			}
			if runErr == nil && len(more) == 0 {
				break
			}
			if len(more) == 0 {
				t.Fatalf("%s: %v, and ACL LOG denied nothing", k.name, runErr)
			}
			found = append(found, more...)
		}
		t.Logf("%s needs: %s", k.name, strings.Join(found, " "))
	}
}

// luaCallRE finds the commands a Lua script runs: redis.call("GET", ...)
// and redis.pcall('get', ...).
var luaCallRE = regexp.MustCompile(`redis\.p?call\(\s*["']([A-Za-z]+)["']`)

// TestACLCoversEveryScriptCommand reads each lock package's Lua scripts and
// checks that its kind's ACL allows every command they can run, including
// those of rare paths no test run takes. A script changed without its ACL
// list fails here, before it fails with NOPERM in a deployment.
func TestACLCoversEveryScriptCommand(t *testing.T) {
	for _, k := range kinds {
		files, err := filepath.Glob(filepath.Join("..", "..", k.name, "*.lua"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s: no Lua scripts found (%v)", k.name, err)
			continue
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range luaCallRE.FindAllStringSubmatch(string(b), -1) {
				if cmd := "+" + strings.ToLower(m[1]); !slices.Contains(k.acl, cmd) {
					t.Errorf("%s: %s runs %s, which the ACL of %s does not allow (%q)", k.name, filepath.Base(f), m[1], userOf(k), k.acl)
				}
			}
		}
	}
}
