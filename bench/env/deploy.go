package env

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/internal/rig"
)

// deployTimeout bounds the discovery of a deployment's primaries.
const deployTimeout = 10 * time.Second

// maxTagTries bounds the search for a hash tag of a slot the first
// primary serves (each try hits it with probability 1/primaries).
const maxTagTries = 100_000

// StartDeployed uses the servers of d (-addrs cluster://... or
// sentinel://...), labelled kind (-server, "" without it). The locks reach
// them through d (registry.Deployment); the bench's admin work (INFO
// commandstats and cpu, SCAN sweeps, the version) goes to every primary:
// a cluster's primaries as its seeds report them (ClusterClient's view,
// ForEachMaster), or the Sentinel group's current primary (Admin[0] is a
// FailoverClient, so it follows a failover). Addrs are those primaries,
// the first holding the bench's own counters (the ledger, redis-benchmark's
// key) under Tag.
func StartDeployed(ctx context.Context, d registry.Deployment, kind string) (*Servers, error) {
	if !d.Set() {
		return nil, errors.New("StartDeployed: no cluster or Sentinel group given")
	}
	ctx, cancel := context.WithTimeout(ctx, deployTimeout)
	defer cancel()
	s := &Servers{Kind: kind, External: true, Deploy: d}
	var err error
	if len(d.Cluster) > 0 {
		err = s.discoverCluster(ctx)
	} else {
		err = s.discoverSentinel(ctx)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("-addrs %s: %w", d, err)
	}
	return s, nil
}

// discoverCluster finds the primaries of the cluster from its seeds, opens
// an admin client on each, and picks Tag.
func (s *Servers) discoverCluster(ctx context.Context) error {
	cc := redis.NewClusterClient(rig.UniversalOptions(s.Deploy.Cluster...).Cluster())
	defer cc.Close()
	if err := cc.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("the cluster does not answer PING: %w", err)
	}
	var mu sync.Mutex
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		s.Addrs = append(s.Addrs, c.Options().Addr)
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing the primaries: %w", err)
	}
	if len(s.Addrs) == 0 {
		return errors.New("the seeds list no primary: is cluster mode on (cluster-enabled yes)?")
	}
	slices.Sort(s.Addrs)
	for _, a := range s.Addrs {
		s.Admin = append(s.Admin, redis.NewClient(rig.ClientOptions(a)))
	}
	if err := s.ping(ctx); err != nil {
		return err
	}
	for i := range maxTagTries {
		tag := "{" + strconv.Itoa(i) + "}"
		m, err := cc.MasterForKey(ctx, tag)
		if err != nil {
			return fmt.Errorf("the primary of slot of %s: %w", tag, err)
		}
		if m.Options().Addr == s.Addrs[0] {
			s.Tag = tag
			return nil
		}
	}
	return fmt.Errorf("no hash slot served by %s among %d tried", s.Addrs[0], maxTagTries)
}

// discoverSentinel asks the sentinels for the group's primary and opens
// the admin client on it, through the sentinels.
func (s *Servers) discoverSentinel(ctx context.Context) error {
	sn := s.Deploy.Sentinel
	var errs []error
	for _, a := range sn.Addrs {
		sc := redis.NewSentinelClient(rig.ClientOptions(a))
		addr, err := sc.GetMasterAddrByName(ctx, sn.Master).Result()
		_ = sc.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("sentinel %s: %w", a, err))
			continue
		}
		s.Addrs = []string{net.JoinHostPort(addr[0], addr[1])}
		break
	}
	if s.Addrs == nil {
		return fmt.Errorf("no sentinel names the primary of %q: %w", sn.Master, errors.Join(errs...))
	}
	o := rig.UniversalOptions(sn.Addrs...)
	o.MasterName = sn.Master
	s.Admin = []*redis.Client{redis.NewFailoverClient(o.Failover())}
	return s.ping(ctx)
}

// ping checks that every admin client answers.
func (s *Servers) ping(ctx context.Context) error {
	for i, c := range s.Admin {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := c.Ping(pctx).Err()
		cancel()
		if err != nil {
			return fmt.Errorf("server %s does not answer PING: %w", s.Addrs[i], err)
		}
	}
	return nil
}

// Describe says what the servers are, for machine.json.
func (s *Servers) Describe() string {
	switch {
	case len(s.Deploy.Cluster) > 0:
		return fmt.Sprintf("external Redis Cluster (seeds %s): %d primaries %v", s.Deploy, len(s.Addrs), s.Addrs)
	case s.Deploy.Sentinel != nil:
		return fmt.Sprintf("external Sentinel group (%s): primary %s at the start", s.Deploy, s.Addrs[0])
	}
	return ""
}
