package env

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/internal/measure"

	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/rig"
)

// KeyRoot prefixes every key the bench writes, so leftovers can be found
// with SCAN and removed.
const KeyRoot = registry.KeyRoot

// Servers are the Redis servers of one bench invocation: rig-started ones
// or the -addrs given, an admin client for each (INFO, SCAN, cleanup), and
// the latency proxies of the rtt scenario.
type Servers struct {
	Nodes    []*rig.Node // nil with -addrs
	Addrs    []string
	Admin    []*redis.Client
	proxies  []*faultproxy.Proxy // created on first use
	External bool
	// Kind is the kind of server (-server) these are; "" without -server,
	// the rig's choice (LOCKLAB_SERVER).
	Kind string
	// Also are the servers of the other kinds of -server redis,valkey,
	// started beside these (the first kind's) with as many nodes; closed
	// with them.
	Also []*Servers
	// Deploy, when Set, is the cluster or Sentinel group the locks run on
	// (StartDeployed); Addrs and Admin are then its primaries.
	Deploy registry.Deployment
	// Tag is a hash tag ("{7}") whose slot the first primary serves, for
	// the keys the bench sends to Addrs[0] itself (its ledger's counters,
	// redis-benchmark's key) on a cluster; "" elsewhere.
	Tag string
}

// StartServers starts n rig servers, or uses the first n of addrs.
func StartServers(ctx context.Context, addrs []string, n int) (*Servers, error) {
	return startServersOf(ctx, addrs, n, "")
}

// StartKinds starts n rig servers of each kind, the first kind's servers
// holding the others' in also; with no kinds (no -server) it is
// startServers.
func StartKinds(ctx context.Context, addrs []string, n int, kinds []string) (*Servers, error) {
	if len(kinds) == 0 {
		return StartServers(ctx, addrs, n)
	}
	first, err := startServersOf(ctx, addrs, n, kinds[0])
	if err != nil {
		return nil, err
	}
	for _, k := range kinds[1:] {
		s, err := startServersOf(ctx, nil, n, k)
		if err != nil {
			first.Close()
			return nil, err
		}
		first.Also = append(first.Also, s)
	}
	return first, nil
}

// startServersOf starts n rig servers of kind ("": the rig's choice), or
// uses the first n of addrs (whose kind is then the label kind).
func startServersOf(ctx context.Context, addrs []string, n int, kind string) (*Servers, error) {
	s := &Servers{Kind: kind}
	if len(addrs) > 0 {
		if len(addrs) < n {
			return nil, fmt.Errorf("-addrs lists %d servers; the selected locks need %d", len(addrs), n)
		}
		s.Addrs = addrs[:n]
		s.External = true
	} else {
		var opts []rig.Option
		if kind != "" {
			opts = append(opts, rig.WithServer(kind))
		}
		nodes, err := rig.NewN(ctx, n, opts...)
		if err != nil {
			return nil, err
		}
		s.Nodes = nodes
		for _, nd := range nodes {
			s.Addrs = append(s.Addrs, nd.Addr())
		}
	}
	for _, a := range s.Addrs {
		s.Admin = append(s.Admin, redis.NewClient(rig.ClientOptions(a)))
	}
	for i, c := range s.Admin {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := c.Ping(pctx).Err()
		cancel()
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("server %s does not answer PING: %w", s.Addrs[i], err)
		}
	}
	return s, nil
}

// Proxied returns the addresses of latency proxies in front of every
// server, each adding rtt each way; the proxies are made on first use.
func (s *Servers) Proxied(rtt time.Duration) ([]string, error) {
	if s.Deploy.Set() {
		return nil, fmt.Errorf("the rtt scenario's proxies sit in front of standalone servers; %s is reached at the addresses its nodes or sentinels report", s.Deploy)
	}
	if s.proxies == nil {
		for _, a := range s.Addrs {
			p, err := faultproxy.New(a)
			if err != nil {
				return nil, err
			}
			s.proxies = append(s.proxies, p)
		}
	}
	out := make([]string, len(s.proxies))
	for i, p := range s.proxies {
		p.SetLatency(rtt)
		out[i] = p.Addr()
	}
	return out, nil
}

// Commandstats snapshots INFO commandstats of every server.
func (s *Servers) Commandstats(ctx context.Context) ([]measure.Commands, error) {
	out := make([]measure.Commands, len(s.Admin))
	for i, c := range s.Admin {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return nil, fmt.Errorf("INFO commandstats on %s: %w", s.Addrs[i], err)
		}
		if out[i], err = measure.ParseCommandstats(info); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Addrs[i], err)
		}
	}
	return out, nil
}

// Cpu returns the CPU time every server process has used so far, summed
// (INFO cpu; see measure.ParseCPU).
func (s *Servers) Cpu(ctx context.Context) (time.Duration, error) {
	var total time.Duration
	for i, c := range s.Admin {
		info, err := c.Info(ctx, "cpu").Result()
		if err != nil {
			return 0, fmt.Errorf("INFO cpu on %s: %w", s.Addrs[i], err)
		}
		d, err := measure.ParseCPU(info)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", s.Addrs[i], err)
		}
		total += d
	}
	return total, nil
}

// Version returns redis_version of the first server.
func (s *Servers) Version(ctx context.Context) string {
	info, err := s.Admin[0].Info(ctx, "server").Result()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "unknown"
}

// Sweep deletes every key matching pattern on every server, with SCAN, and
// returns how many there were.
func (s *Servers) Sweep(ctx context.Context, pattern string) (int, error) {
	n, _, err := s.SweepTTL(ctx, pattern)
	return n, err
}

// SweepTTL is sweep, also counting the keys that had a TTL (they would
// have expired by themselves, such as release receipts and wait queues).
func (s *Servers) SweepTTL(ctx context.Context, pattern string) (n, expiring int, err error) {
	for i, c := range s.Admin {
		var cursor uint64
		for iter := 0; ; iter++ {
			if iter > 1_000_000 {
				return n, expiring, errors.New("sweep: SCAN did not finish")
			}
			keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				return n, expiring, fmt.Errorf("SCAN on %s: %w", s.Addrs[i], err)
			}
			if len(keys) > 0 {
				p := c.Pipeline()
				ttls := make([]*redis.DurationCmd, len(keys))
				for j, k := range keys {
					ttls[j] = p.PTTL(ctx, k)
				}
				for _, k := range keys {
					p.Del(ctx, k) // one key a DEL: a cluster refuses keys of several slots (CROSSSLOT)
				}
				if _, err := p.Exec(ctx); err != nil {
					return n, expiring, fmt.Errorf("PTTL+DEL on %s: %w", s.Addrs[i], err)
				}
				for _, t := range ttls {
					if t.Val() > 0 {
						expiring++
					}
				}
				n += len(keys)
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return n, expiring, nil
}

// Close closes proxies, admin clients and rig servers.
func (s *Servers) Close() {
	for _, p := range s.proxies {
		_ = p.Close()
	}
	for _, c := range s.Admin {
		_ = c.Close()
	}
	for _, nd := range s.Nodes {
		_ = nd.Close()
	}
	for _, o := range s.Also {
		o.Also = nil
		o.Close()
	}
	_ = Others.Close() // etcd, ZooKeeper, PostgreSQL, if a lock started them (systems.go)
}

// Server kinds accepted by -server.
const (
	ServerRedis  = "redis"
	ServerValkey = "valkey"
)

var ServerKinds = []string{ServerRedis, ServerValkey}

// Versions returns each kind's server version (INFO server: valkey_version
// for Valkey, which reports redis_version 7.2.4 for its clients' sake).
func (s *Servers) Versions(ctx context.Context) map[string]string {
	if s.Kind == "" {
		return nil
	}
	out := map[string]string{}
	for _, o := range append([]*Servers{s}, s.Also...) {
		out[o.Kind] = o.serverVersion(ctx)
	}
	return out
}

// serverVersion returns valkey_version, or else redis_version, of the
// first server.
func (s *Servers) serverVersion(ctx context.Context) string {
	info, err := s.Admin[0].Info(ctx, "server").Result()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	v := "unknown"
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if x, ok := strings.CutPrefix(line, "valkey_version:"); ok {
			return x
		}
		if x, ok := strings.CutPrefix(line, "redis_version:"); ok {
			v = x
		}
	}
	return v
}

// RandomID returns 8 random hex digits, to tell one run's keys from another's.
func RandomID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
