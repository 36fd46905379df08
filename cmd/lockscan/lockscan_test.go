package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/reentrant"
)

var (
	redisAddr string
	prefixN   atomic.Int64
)

func TestMain(m *testing.M) {
	rig.Main(m, 1, func(nodes []*rig.Node) { redisAddr = nodes[0].Addr() })
}

// admin returns a client to the shared server, closed after the test.
func admin(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(rig.ClientOptions(redisAddr))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newPrefix returns a key prefix unique to the test; every key under it
// is deleted when the test ends.
func newPrefix(t *testing.T, c redis.UniversalClient) string {
	t.Helper()
	p := fmt.Sprintf("lockscan:t%d:", prefixN.Add(1))
	t.Cleanup(func() {
		ctx := context.Background()
		var keys []string
		iter := c.Scan(ctx, 0, p+"*", 100).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		// In a cluster a DEL of keys in several slots is refused; delete
		// one at a time.
		for _, k := range keys {
			c.Del(ctx, k)
		}
	})
	return p
}

// holdLock takes a correct lock on key with ttl, as a live holder would
// hold it, and releases it when the test ends.
func holdLock(t *testing.T, c *redis.Client, key string, ttl time.Duration) *correct.Mutex {
	t.Helper()
	m := correct.New(c, key, correct.WithTTL(ttl))
	if err := m.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Unlock(context.Background()) })
	return m
}

// lockscan runs the command with args and returns its exit status and
// output.
func lockscan(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, args, func(k string) string { return env[k] }, &out, &errOut)
	return code, out.String(), errOut.String()
}

// scanJSON runs the command with -json and decodes the report.
func scanJSON(t *testing.T, args ...string) (int, *Report) {
	t.Helper()
	code, out, errOut := lockscan(t, nil, append(args, "-json")...)
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("lockscan %q: exit %d, output not JSON (%v):\n%s\nstderr: %s", args, code, err, out, errOut)
	}
	return code, &r
}

func find(r *Report, key string) *Lock {
	for i := range r.Locks {
		if r.Locks[i].Key == key {
			return &r.Locks[i]
		}
	}
	return nil
}

func TestLeakedKeyIsFoundAndExitStatusIs3(t *testing.T) {
	c := admin(t)
	ctx := t.Context()
	p := newPrefix(t, c)
	// A lock whose holder died between SETNX and EXPIRE: no TTL.
	leaked := p + "order:1001"
	if err := c.SetNX(ctx, leaked, "token-of-a-dead-holder", 0).Err(); err != nil {
		t.Fatal(err)
	}
	healthy := holdLock(t, c, p+"order:1002", time.Minute)

	code, out, errOut := lockscan(t, nil, "-addr", redisAddr, "-pattern", p+"*")
	if code != exitLeaks {
		t.Fatalf("lockscan with a leaked key: exit %d; want %d\nstdout:\n%s\nstderr:\n%s", code, exitLeaks, out, errOut)
	}
	for _, want := range []string{"2 keys, 1 without a TTL", "LEAKED", leaked, `"token-of-a-dead-holder"`, healthy.Token(), "exit status 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("report does not mention %q:\n%s", want, out)
		}
	}

	code, r := scanJSON(t, "-addr", redisAddr, "-pattern", p+"*")
	if code != exitLeaks || r.Keys != 2 || r.Leaked != 1 {
		t.Fatalf("JSON report: exit %d, keys %d, leaked %d; want %d, 2, 1", code, r.Keys, r.Leaked, exitLeaks)
	}
	if l := r.Locks[0]; l.Key != leaked || !l.Leaked || l.TTLMS != -1 || l.Token != "token-of-a-dead-holder" {
		t.Errorf("first lock listed = %+v; want the leaked key first, ttl_ms -1, its token", l)
	}
	h := find(r, p+"order:1002")
	if h == nil || h.Leaked || h.TTLMS <= 0 || h.TTLMS > 60_000 || h.Token != healthy.Token() {
		t.Errorf("healthy lock = %+v; want not leaked, 0 < ttl_ms <= 60000, token %q", h, healthy.Token())
	}
	if got := bucketCount(r, "10s-1m") + bucketCount(r, "1m-10m"); got != 1 {
		t.Errorf("healthy lock in the 10s-1m/1m-10m buckets: %d; want 1 (buckets %+v)", got, r.TTL)
	}
	if got := bucketCount(r, noTTLLabel); got != 1 {
		t.Errorf("%q bucket = %d; want 1", noTTLLabel, got)
	}
}

func bucketCount(r *Report, label string) int {
	for _, b := range r.TTL {
		if b.Label == label {
			return b.Count
		}
	}
	return -1
}

// TestEvictingServerIsReported: a server with maxmemory and a policy that
// evicts is named in the report and exits 4 when nothing leaked (3 wins
// when something did); a user without INFO sees "unknown", and no alert.
func TestEvictingServerIsReported(t *testing.T) {
	node := rig.Start(t, rig.WithArgs("--maxmemory", "64mb", "--maxmemory-policy", "volatile-lru"))
	c := node.Client()
	ctx := t.Context()
	if err := c.Set(ctx, "lock:job", "tok", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := lockscan(t, nil, "-addr", node.Addr())
	if code != exitEvicts || !strings.Contains(out, "volatile-lru") || !strings.Contains(out, "YES: a held lock can vanish") {
		t.Errorf("lockscan on an evicting server: exit %d; want %d naming volatile-lru\n%s%s", code, exitEvicts, out, errOut)
	}
	code, r := scanJSON(t, "-addr", node.Addr())
	if code != exitEvicts || r.Evicting != 1 || len(r.Servers) != 1 {
		t.Fatalf("JSON: exit %d, evicting %d, servers %v; want %d, 1, one server", code, r.Evicting, r.Servers, exitEvicts)
	}
	if s := r.Servers[0]; !s.Checked || !s.Evicts || s.Maxmemory != 64<<20 || s.Policy != "volatile-lru" || s.Addr != node.Addr() {
		t.Errorf("server = %+v; want %s checked, evicting, 64 MiB, volatile-lru", s, node.Addr())
	}
	if err := c.Set(ctx, "lock:leak", "tok", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := lockscan(t, nil, "-addr", node.Addr()); code != exitLeaks {
		t.Errorf("leak and eviction: exit %d; want %d (the leak first)", code, exitLeaks)
	}
	if err := c.Del(ctx, "lock:leak").Err(); err != nil {
		t.Fatal(err)
	}

	// Without +info: unknown, not an alert and not an error.
	if err := c.Do(ctx, "ACL", "SETUSER", "noinfo", "on", ">pw", "~lock:*", "-@all", "+scan", "+type", "+pttl", "+getrange", "+hlen", "+hscan").Err(); err != nil {
		t.Fatal(err)
	}
	u := url.URL{Scheme: "redis", User: url.UserPassword("noinfo", "pw"), Host: node.Addr()}
	code, out, errOut = lockscan(t, nil, "-url", u.String())
	if code != exitOK || !strings.Contains(out, "unknown: INFO memory refused") {
		t.Errorf("as a user without INFO: exit %d; want 0 and the eviction unknown\n%s%s", code, out, errOut)
	}

	// noeviction with a limit: not evicting.
	if err := c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := lockscan(t, nil, "-addr", node.Addr()); code != exitOK {
		t.Errorf("noeviction: exit %d; want 0\n%s%s", code, out, errOut)
	}
}

func TestHealthyLocksExitZero(t *testing.T) {
	c := admin(t)
	p := newPrefix(t, c)
	for i := range 3 {
		holdLock(t, c, fmt.Sprintf("%sjob:%d", p, i), 5*time.Second)
	}
	code, out, errOut := lockscan(t, nil, "-addr", redisAddr, "-pattern", p+"*")
	if code != exitOK {
		t.Fatalf("lockscan on healthy locks: exit %d; want 0\n%s%s", code, out, errOut)
	}
	if strings.Contains(out, "LEAKED") || !strings.Contains(out, "3 keys, 0 without a TTL") {
		t.Errorf("report on healthy locks:\n%s\nwant 3 keys, none leaked", out)
	}
	// Nothing matches: a clean run too.
	if code, out, _ := lockscan(t, nil, "-addr", redisAddr, "-pattern", p+"nothing:*"); code != exitOK || !strings.Contains(out, "0 keys") {
		t.Errorf("lockscan on no key: exit %d\n%s; want 0 and 0 keys", code, out)
	}
}

func TestReentrantOwnersAndCountsAreDecoded(t *testing.T) {
	c := admin(t)
	p := newPrefix(t, c)
	key := p + "account:7"
	m := reentrant.New(c, key, reentrant.WithTTL(time.Minute))
	owner := reentrant.NewOwner()
	ctx := reentrant.WithOwner(t.Context(), owner)
	for range 2 { // held twice by the same owner: count 2
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx := reentrant.WithOwner(context.Background(), owner)
		_ = m.Unlock(ctx)
		_ = m.Unlock(ctx)
	})
	// A hash that is not a reentrant lock: its value is reported as is.
	odd := p + "odd"
	if err := c.HSet(t.Context(), odd, "field", "not-a-count").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Expire(t.Context(), odd, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}

	code, r := scanJSON(t, "-addr", redisAddr, "-pattern", p+"*")
	if code != exitOK || r.Reentrant != 2 {
		t.Fatalf("exit %d, reentrant %d; want 0, 2", code, r.Reentrant)
	}
	l := find(r, key)
	want := []Owner{{Owner: string(owner), Count: 2}}
	if l == nil || l.Type != "hash" || !slices.Equal(l.Owners, want) || l.OwnersTotal != 1 || l.Leaked {
		t.Errorf("reentrant lock = %+v; want type hash, owners %+v, owners_total 1", l, want)
	}
	if o := find(r, odd); o == nil || !slices.Equal(o.Owners, []Owner{{Owner: "field", Value: "not-a-count"}}) {
		t.Errorf("odd hash = %+v; want its field with value \"not-a-count\"", o)
	}
	_, out, _ := lockscan(t, nil, "-addr", redisAddr, "-pattern", p+"*")
	if !strings.Contains(out, "owner "+string(owner)+" count 2") {
		t.Errorf("text report does not show the owner and count:\n%s", out)
	}
}

func TestExcludeAndLimit(t *testing.T) {
	c := admin(t)
	ctx := t.Context()
	p := newPrefix(t, c)
	// A fencing counter never expires by design; excluded by default.
	if err := c.Set(ctx, p+"{orders}:fence", 41, 0).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := c.Set(ctx, fmt.Sprintf("%sk:%d", p, i), "tok", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	code, r := scanJSON(t, "-addr", redisAddr, "-pattern", p+"*", "-limit", "2", "-count", "2")
	if code != exitOK || r.Keys != 5 || r.Excluded != 1 || r.Leaked != 0 || len(r.Locks) != 2 || !r.Truncated {
		t.Errorf("with the default -exclude and -limit 2: exit %d, keys %d, excluded %d, leaked %d, listed %d, truncated %v; want 0, 5, 1, 0, 2, true",
			code, r.Keys, r.Excluded, r.Leaked, len(r.Locks), r.Truncated)
	}
	code, r = scanJSON(t, "-addr", redisAddr, "-pattern", p+"*", "-exclude", "", "-limit", "0")
	if code != exitLeaks || r.Keys != 6 || r.Leaked != 1 || len(r.Locks) != 6 || r.Truncated || r.Locks[0].Key != p+"{orders}:fence" {
		t.Errorf("with -exclude \"\": exit %d, keys %d, leaked %d, listed %d, first %q; want %d, 6, 1, 6, the counter",
			code, r.Keys, r.Leaked, len(r.Locks), r.Locks[0].Key, exitLeaks)
	}
}

func TestJSONSchemaIsStable(t *testing.T) {
	c := admin(t)
	ctx := t.Context()
	p := newPrefix(t, c)
	if err := c.Set(ctx, p+"s", strings.Repeat("x", 300), 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, p+"h", "owner-1", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.PExpire(ctx, p+"h", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := lockscan(t, nil, "-addr", redisAddr, "-pattern", p+"*", "-json")
	if code != exitLeaks {
		t.Fatalf("exit %d; want %d\n%s", code, exitLeaks, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	// The documented schema (README.md). Adding a field is allowed within
	// lockscan/v1 and needs this list and the README updated; removing or
	// renaming one needs a new schema version.
	wantTop := []string{"evicting", "exclude", "excluded", "keys", "leaked", "locks", "pattern", "reentrant", "schema", "servers", "target", "truncated", "ttl_buckets", "vanished"}
	if got := keysOf(doc); !slices.Equal(got, wantTop) {
		t.Errorf("top-level fields = %q; want %q", got, wantTop)
	}
	if doc["schema"] != "lockscan/v1" {
		t.Errorf("schema = %v; want lockscan/v1", doc["schema"])
	}
	buckets := doc["ttl_buckets"].([]any)
	var labels []string
	for _, b := range buckets {
		m := b.(map[string]any)
		labels = append(labels, m["label"].(string))
		if got := keysOf(m); !slices.Equal(got, []string{"count", "label", "max_ms", "min_ms"}) {
			t.Errorf("bucket fields = %q; want count, label, max_ms, min_ms", got)
		}
	}
	if want := []string{"<1s", "1s-10s", "10s-1m", "1m-10m", "10m-1h", ">=1h", "no TTL"}; !slices.Equal(labels, want) {
		t.Errorf("bucket labels = %q; want %q", labels, want)
	}
	last := buckets[len(buckets)-1].(map[string]any)
	if last["min_ms"] != nil || last["max_ms"] != nil {
		t.Errorf("no-TTL bucket bounds = %v, %v; want null, null", last["min_ms"], last["max_ms"])
	}
	servers := doc["servers"].([]any)
	if len(servers) != 1 {
		t.Fatalf("servers = %v; want the one scanned", servers)
	}
	if got := keysOf(servers[0].(map[string]any)); !slices.Equal(got, []string{"addr", "checked", "evicts", "maxmemory", "maxmemory_policy"}) {
		t.Errorf("server fields = %q; want addr, checked, evicts, maxmemory, maxmemory_policy", got)
	}
	locks := doc["locks"].([]any)
	want := map[string][]string{
		p + "s": {"key", "leaked", "token", "token_truncated", "ttl_ms", "type"},
		p + "h": {"key", "leaked", "owners", "owners_total", "ttl_ms", "type"},
	}
	for _, l := range locks {
		m := l.(map[string]any)
		key := m["key"].(string)
		if got := keysOf(m); !slices.Equal(got, want[key]) {
			t.Errorf("fields of %s = %q; want %q", key, got, want[key])
		}
		if key == p+"h" {
			o := m["owners"].([]any)[0].(map[string]any)
			if got := keysOf(o); !slices.Equal(got, []string{"count", "owner"}) {
				t.Errorf("owner fields = %q; want count, owner", got)
			}
		}
		if key == p+"s" && len(m["token"].(string)) != valuePrefix {
			t.Errorf("token of a 300-byte value has %d bytes; want the first %d", len(m["token"].(string)), valuePrefix)
		}
	}
}

func keysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestUsageAndConnectionErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want int
		msg  string
	}{
		{"no server", nil, nil, exitUsage, "no server"},
		{"both", nil, []string{"-addr", redisAddr, "-url", "redis://" + redisAddr}, exitUsage, "not both"},
		{"bad count", nil, []string{"-addr", redisAddr, "-count", "0"}, exitUsage, "-count 0"},
		{"bad limit", nil, []string{"-addr", redisAddr, "-limit", "-1"}, exitUsage, "-limit -1"},
		{"empty pattern", nil, []string{"-addr", redisAddr, "-pattern", ""}, exitUsage, "-pattern is empty"},
		{"stray argument", nil, []string{"-addr", redisAddr, "extra"}, exitUsage, "unexpected arguments"},
		{"unknown flag", nil, []string{"-nope"}, exitUsage, "not defined"},
		{"help", nil, []string{"-h"}, exitOK, "usage: lockscan"},
		{"bad url", nil, []string{"-url", "http://" + redisAddr}, exitError, "invalid URL scheme"},
		{"url hides its password", nil, []string{"-url", "redis://u:s3cret@127.0.0.1:bad"}, exitError, "-url"},
		{"refused", nil, []string{"-addr", closed}, exitError, "connection refused"},
		{"env url", map[string]string{urlEnv: "redis://" + redisAddr}, []string{"-pattern", "lockscan:none:*"}, exitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := lockscan(t, tt.env, tt.args...)
			if code != tt.want || !strings.Contains(errOut, tt.msg) {
				t.Errorf("lockscan %q: exit %d, stderr %q; want exit %d mentioning %q (stdout %q)", tt.args, code, errOut, tt.want, tt.msg, out)
			}
			if strings.Contains(errOut+out, "s3cret") {
				t.Errorf("lockscan %q printed the URL's password: %q", tt.args, errOut+out)
			}
		})
	}
}

// setinfo is the CLIENT SETINFO that go-redis sends on connect and whose
// refusal it ignores; Redis 7.2+ logs the refusal (7.0 has no such
// command).
const setinfo = "client|setinfo"

// TestLeastPrivilegeUser runs the scan as an ACL user allowed only the
// commands README.md lists, through a redis:// URL.
func TestLeastPrivilegeUser(t *testing.T) {
	c := admin(t)
	ctx := t.Context()
	p := newPrefix(t, c)
	user := fmt.Sprintf("lockscan-%d", prefixN.Add(1))
	rules := []any{"ACL", "SETUSER", user, "reset", "on", ">scan-Secret1", "~lockscan:*", "resetchannels", "-@all",
		"+scan", "+type", "+pttl", "+getrange", "+hlen", "+hscan", "+info"}
	if err := c.Do(ctx, rules...).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Do(context.Background(), "ACL", "DELUSER", user) })
	if err := c.Set(ctx, p+"leak", "tok", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, p+"r", "o", 3).Err(); err != nil {
		t.Fatal(err)
	}
	u := url.URL{Scheme: "redis", User: url.UserPassword(user, "scan-Secret1"), Host: redisAddr}
	code, out, errOut := lockscan(t, nil, "-url", u.String(), "-pattern", p+"*")
	if code != exitLeaks || !strings.Contains(out, "2 keys, 2 without a TTL, 1 reentrant") {
		t.Errorf("as %s: exit %d; want %d with 2 leaked keys\nstdout:\n%s\nstderr:\n%s", user, code, exitLeaks, out, errOut)
	}
	if strings.Contains(out, "scan-Secret1") || !strings.Contains(out, "xxxxx") {
		t.Errorf("report target shows the password or no redaction:\n%s", out)
	}
	entries, err := c.ACLLog(ctx, 50).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Username == user && e.Object != setinfo {
			t.Errorf("ACL LOG: %s was denied %s %q; README.md's list is short of it", user, e.Reason, e.Object)
		}
	}
}

// TestClusterScansEveryPrimary scans a 3-primary cluster from one seed
// address and finds the keys of every primary.
func TestClusterScansEveryPrimary(t *testing.T) {
	cl := rig.StartCluster(t, 3)
	t.Parallel()
	ctx := t.Context()
	cc := cl.Client()
	p := newPrefix(t, cc)
	for i := range 30 {
		ttl := time.Minute
		if i == 7 {
			ttl = 0 // the leak
		}
		if err := cc.Set(ctx, fmt.Sprintf("%sk%d", p, i), "tok", ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range cl.Nodes() {
		if size, err := n.Client().DBSize(ctx).Result(); err != nil || size == 0 {
			t.Fatalf("node %s holds %d keys (%v); the test wants keys on every primary", n.Addr(), size, err)
		}
	}
	code, r := scanJSON(t, "-cluster", "-addr", cl.Addrs()[0], "-pattern", p+"*", "-limit", "0")
	if code != exitLeaks || r.Keys != 30 || r.Leaked != 1 || r.Locks[0].Key != p+"k7" {
		t.Errorf("cluster scan: exit %d, keys %d, leaked %d; want %d, 30, 1 (%sk7 first)", code, r.Keys, r.Leaked, exitLeaks, p)
	}
	if !strings.HasPrefix(r.Target, "cluster ") {
		t.Errorf("target = %q; want it to say cluster", r.Target)
	}

	// The least-privilege user of README.md, plus CLUSTER SLOTS, on every
	// node (ACLs are per node).
	for _, n := range cl.Nodes() {
		err := n.Client().Do(ctx, "ACL", "SETUSER", "lockscan", "reset", "on", ">scan-Secret1", "~lockscan:*", "resetchannels", "-@all",
			"+scan", "+type", "+pttl", "+getrange", "+hlen", "+hscan", "+info", "+cluster|slots").Err()
		if err != nil {
			t.Fatal(err)
		}
	}
	u := url.URL{Scheme: "redis", User: url.UserPassword("lockscan", "scan-Secret1"), Host: cl.Addrs()[1]}
	code, out, errOut := lockscan(t, nil, "-cluster", "-url", u.String(), "-pattern", p+"*")
	if code != exitLeaks || !strings.Contains(out, "30 keys, 1 without a TTL") {
		t.Errorf("cluster scan as lockscan: exit %d; want %d, 30 keys, 1 leaked\n%s%s", code, exitLeaks, out, errOut)
	}
	for _, n := range cl.Nodes() {
		entries, err := n.Client().ACLLog(ctx, 50).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Object != setinfo {
				t.Errorf("ACL LOG on %s: %s denied %s %q; README.md's list is short of it", n.Addr(), e.Username, e.Reason, e.Object)
			}
		}
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, key string
		want         bool
	}{
		{"*:fence", "{orders}:fence", true},
		{"*:fence", "lock:a/b:fence", true},
		{"*:fence", "lock:fence:x", false},
		{"lock:?", "lock:a", true},
		{"lock:?", "lock:ab", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"*", "", true},
		{"", "x", false},
	}
	for _, tt := range tests {
		if got := match(tt.pattern, tt.key); got != tt.want {
			t.Errorf("match(%q, %q) = %v; want %v", tt.pattern, tt.key, got, tt.want)
		}
	}
}
