package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/preflight"
)

// Schema names the version of the JSON report. It changes only when a
// field is removed or changes meaning; new fields may be added within a
// version.
const Schema = "lockscan/v1"

const (
	// valuePrefix is how many bytes of a string value (a holder's token) a
	// scan reads: GETRANGE key 0 valuePrefix-1.
	valuePrefix = 256
	// hashPage is the HSCAN COUNT hint for a hash's owners. A reentrant
	// lock has one field, and a small hash is returned whole whatever the
	// hint; a huge one is reported by its first page and its HLEN.
	hashPage = 100
)

// Report is the result of a scan, and the JSON that --json prints.
type Report struct {
	Schema  string   `json:"schema"`  // always [Schema]
	Target  string   `json:"target"`  // what was scanned, without credentials
	Pattern string   `json:"pattern"` // the SCAN MATCH pattern
	Exclude []string `json:"exclude"` // patterns of keys not examined
	// Keys is the number of keys matched and examined; Excluded the number
	// matched but skipped by Exclude; Vanished those gone between SCAN and
	// their inspection (expired or released meanwhile).
	Keys     int `json:"keys"`
	Excluded int `json:"excluded"`
	Vanished int `json:"vanished"`
	// Leaked is the number of keys without a TTL: possible leaked locks.
	Leaked int `json:"leaked"`
	// Reentrant is the number of hash keys (reentrant locks).
	Reentrant int      `json:"reentrant"`
	TTL       []Bucket `json:"ttl_buckets"`
	// Locks lists the keys examined, leaked ones first, then by key, at
	// most the --limit given; Truncated says whether some were left out
	// (the counts above always cover every key).
	Locks     []Lock `json:"locks"`
	Truncated bool   `json:"truncated"`
	// Servers are the servers scanned (each primary of a cluster), with
	// their eviction settings; Evicting counts those that may evict keys.
	Servers  []Server `json:"servers"`
	Evicting int      `json:"evicting"`
}

// Server is one server scanned, and whether it may evict lock keys: with
// maxmemory set and any maxmemory-policy but noeviction, Redis deletes
// keys under memory pressure (volatile-* policies too: every lock key has
// a TTL), and a lock key evicted while held lets a second holder in.
type Server struct {
	Addr string `json:"addr"`
	// Checked says whether the server answered INFO memory; when the ACL
	// or the server refuses it, the fields below are unknown (zero).
	Checked bool `json:"checked"`
	// Maxmemory is in bytes; 0 means no limit.
	Maxmemory int64  `json:"maxmemory"`
	Policy    string `json:"maxmemory_policy"`
	Evicts    bool   `json:"evicts"`
}

// Bucket counts the keys whose TTL is in [MinMS, MaxMS). MaxMS is null
// for the last timed bucket; the "no TTL" bucket has both null.
type Bucket struct {
	Label string `json:"label"`
	MinMS *int64 `json:"min_ms"`
	MaxMS *int64 `json:"max_ms"`
	Count int    `json:"count"`
}

// Lock is one key found.
type Lock struct {
	Key  string `json:"key"`
	Type string `json:"type"` // Redis type: "string", "hash", "list", ...
	// TTLMS is the remaining time to live in milliseconds, or -1 when the
	// key has none.
	TTLMS  int64 `json:"ttl_ms"`
	Leaked bool  `json:"leaked"` // no TTL
	// Token is a string key's value (a holder's token), at most its first
	// 256 bytes; TokenTruncated says whether it is longer.
	Token          string `json:"token,omitempty"`
	TokenTruncated bool   `json:"token_truncated,omitempty"`
	// Owners are a hash key's fields and counts (reentrant locks: owner id
	// and how many times it holds the lock); OwnersTotal is HLEN, which
	// is more than len(Owners) only for a huge hash.
	Owners      []Owner `json:"owners,omitempty"`
	OwnersTotal int64   `json:"owners_total,omitempty"`
}

// Owner is one field of a hash lock. Count is the field's value when it
// is an integer (a reentrant count); otherwise Value holds it.
type Owner struct {
	Owner string `json:"owner"`
	Count int64  `json:"count"`
	Value string `json:"value,omitempty"`
}

// bucketBounds are the TTL buckets' upper bounds: <1s, 1s-10s, 10s-1m,
// 1m-10m, 10m-1h, >=1h; then "no TTL".
var bucketBounds = []struct {
	label string
	max   time.Duration // 0 for the open last one
}{
	{"<1s", time.Second},
	{"1s-10s", 10 * time.Second},
	{"10s-1m", time.Minute},
	{"1m-10m", 10 * time.Minute},
	{"10m-1h", time.Hour},
	{">=1h", 0},
}

// noTTLLabel labels the bucket of keys without a TTL.
const noTTLLabel = "no TTL"

func newBuckets() []Bucket {
	out := make([]Bucket, 0, len(bucketBounds)+1)
	var lo int64
	for _, b := range bucketBounds {
		min := lo
		bk := Bucket{Label: b.label, MinMS: &min}
		if b.max > 0 {
			max := b.max.Milliseconds()
			bk.MaxMS = &max
			lo = max
		}
		out = append(out, bk)
	}
	return append(out, Bucket{Label: noTTLLabel})
}

func (r *Report) count(ttlMS int64) {
	if ttlMS < 0 {
		r.TTL[len(r.TTL)-1].Count++
		return
	}
	for i := range r.TTL[:len(r.TTL)-1] {
		if b := r.TTL[i]; b.MaxMS == nil || ttlMS < *b.MaxMS {
			r.TTL[i].Count++
			return
		}
	}
}

// options are what a scan looks for.
type options struct {
	pattern string   // SCAN MATCH pattern
	count   int64    // SCAN COUNT hint
	limit   int      // most locks listed in the report; 0 = all
	exclude []string // key patterns skipped (see match)
}

// scanner is what a scan needs from a connection to one server: SCAN,
// pipelines, INFO and its address. *redis.Client implements it.
type scanner interface {
	Scan(ctx context.Context, cursor uint64, match string, count int64) *redis.ScanCmd
	Pipeline() redis.Pipeliner
	Info(ctx context.Context, section ...string) *redis.StringCmd
	Options() *redis.Options
}

// scan walks every server (one for a single Redis, each primary for a
// cluster) with SCAN MATCH pattern COUNT count, never KEYS, and inspects
// each key found: TYPE, PTTL, and the holder (GETRANGE for a string,
// HLEN and HSCAN for a hash). Inspection is pipelined per SCAN batch.
// The commands it needs are SCAN, TYPE, PTTL, GETRANGE, HLEN and HSCAN;
// INFO memory, for each server's eviction settings, it uses if allowed.
func scan(ctx context.Context, target string, servers []scanner, o options) (*Report, error) {
	if o.pattern == "" {
		return nil, errors.New("empty pattern")
	}
	if o.count < 1 {
		return nil, fmt.Errorf("count %d; want at least 1", o.count)
	}
	if o.limit < 0 {
		return nil, fmt.Errorf("limit %d; want 0 (no limit) or more", o.limit)
	}
	r := &Report{Schema: Schema, Target: target, Pattern: o.pattern, Exclude: o.exclude, TTL: newBuckets(), Locks: []Lock{}}
	if r.Exclude == nil {
		r.Exclude = []string{}
	}
	var all []Lock
	for _, s := range servers {
		srv, err := evictionOf(ctx, s)
		if err != nil {
			return nil, err
		}
		r.Servers = append(r.Servers, srv)
		if srv.Evicts {
			r.Evicting++
		}
		var cursor uint64
		for {
			keys, next, err := s.Scan(ctx, cursor, o.pattern, o.count).Result()
			if err != nil {
				return nil, fmt.Errorf("SCAN: %w", err)
			}
			var batch []string
			for _, k := range keys {
				if slices.ContainsFunc(o.exclude, func(p string) bool { return match(p, k) }) {
					r.Excluded++
					continue
				}
				batch = append(batch, k)
			}
			locks, vanished, err := inspect(ctx, s, batch)
			if err != nil {
				return nil, err
			}
			r.Vanished += vanished
			all = append(all, locks...)
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	// SCAN may return a key twice (when the table is resized meanwhile);
	// count each once.
	slices.SortFunc(all, func(a, b Lock) int { return strings.Compare(a.Key, b.Key) })
	all = slices.CompactFunc(all, func(a, b Lock) bool { return a.Key == b.Key })
	r.tally(all)
	slices.SortStableFunc(all, func(a, b Lock) int {
		switch {
		case a.Leaked && !b.Leaked:
			return -1
		case !a.Leaked && b.Leaked:
			return 1
		}
		return 0
	})
	if o.limit > 0 && len(all) > o.limit {
		all, r.Truncated = all[:o.limit], true
	}
	r.Locks = append(r.Locks, all...)
	return r, nil
}

// evictionOf reads a server's eviction settings from INFO memory. A
// refusal (NOPERM, or INFO renamed away) leaves them unknown; any other
// error is the scan's.
func evictionOf(ctx context.Context, s scanner) (Server, error) {
	srv := Server{Addr: s.Options().Addr}
	info, err := s.Info(ctx, "memory").Result()
	if err != nil {
		if msg := err.Error(); strings.HasPrefix(msg, "NOPERM") || strings.HasPrefix(msg, "ERR unknown command") {
			return srv, nil
		}
		return srv, fmt.Errorf("INFO memory: %w", err)
	}
	srv.Checked = true
	srv.Maxmemory, srv.Policy = preflight.Memory(info)
	srv.Evicts = preflight.Evicts(srv.Maxmemory, srv.Policy)
	return srv, nil
}

// tally counts locks into the report's totals and TTL buckets.
func (r *Report) tally(locks []Lock) {
	for _, l := range locks {
		r.Keys++
		r.count(l.TTLMS)
		if l.Leaked {
			r.Leaked++
		}
		if l.Type == "hash" {
			r.Reentrant++
		}
	}
}

// inspect reads the type, TTL and holder of each key in two pipelined
// round trips. Keys gone meanwhile (TYPE none or PTTL -2) are counted as
// vanished and left out.
func inspect(ctx context.Context, s scanner, keys []string) ([]Lock, int, error) {
	if len(keys) == 0 {
		return nil, 0, nil
	}
	pipe := s.Pipeline()
	types := make([]*redis.StatusCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, k := range keys {
		types[i] = pipe.Type(ctx, k)
		ttls[i] = pipe.PTTL(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fmt.Errorf("TYPE/PTTL: %w", err)
	}
	var locks []Lock
	vanished := 0
	for i, k := range keys {
		typ := types[i].Val()
		ttl := ttls[i].Val()
		if typ == "none" || ttl == -2 {
			vanished++
			continue
		}
		l := Lock{Key: k, Type: typ, TTLMS: -1}
		if ttl >= 0 {
			l.TTLMS = ttl.Milliseconds()
		} else {
			l.Leaked = true // PTTL -1: the key exists and has no TTL
		}
		locks = append(locks, l)
	}

	pipe = s.Pipeline()
	values := make([]*redis.StringCmd, len(locks))
	hlens := make([]*redis.IntCmd, len(locks))
	fields := make([]*redis.ScanCmd, len(locks))
	for i, l := range locks {
		switch l.Type {
		case "string":
			values[i] = pipe.GetRange(ctx, l.Key, 0, valuePrefix) // one byte more, to see truncation
		case "hash":
			hlens[i] = pipe.HLen(ctx, l.Key)
			fields[i] = pipe.HScan(ctx, l.Key, 0, "", hashPage)
		}
	}
	if pipe.Len() == 0 {
		return locks, vanished, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, fmt.Errorf("GETRANGE/HSCAN: %w", err)
	}
	for i := range locks {
		l := &locks[i]
		switch {
		case values[i] != nil:
			v := values[i].Val()
			if len(v) > valuePrefix {
				v, l.TokenTruncated = v[:valuePrefix], true
			}
			l.Token = v
		case fields[i] != nil:
			kv, _ := fields[i].Val()
			for j := 0; j+1 < len(kv); j += 2 {
				o := Owner{Owner: kv[j]}
				if n, err := strconv.ParseInt(kv[j+1], 10, 64); err == nil {
					o.Count = n
				} else {
					o.Value = kv[j+1]
				}
				l.Owners = append(l.Owners, o)
			}
			slices.SortFunc(l.Owners, func(a, b Owner) int { return strings.Compare(a.Owner, b.Owner) })
			l.Owners = slices.CompactFunc(l.Owners, func(a, b Owner) bool { return a.Owner == b.Owner })
			l.OwnersTotal = hlens[i].Val()
		}
	}
	return locks, vanished, nil
}

// match reports whether key matches pattern, where '*' matches any run of
// bytes (including none) and '?' any one byte; every other byte matches
// itself. (Redis's glob also has [...] classes and '\' escapes; --exclude
// does not need them.)
func match(pattern, key string) bool {
	// Iterative glob with backtracking to the last '*'.
	p, k := 0, 0
	star, mark := -1, 0
	for k < len(key) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == key[k]):
			p++
			k++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, k
			p++
		case star >= 0:
			p = star + 1
			mark++
			k = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
