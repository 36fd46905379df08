package registry

import (
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/locklab/locklab/internal/rig"
)

// Deployment says how server 0 is deployed when it is not a standalone
// redis-server (-addrs cluster://... or sentinel://...): a Redis Cluster,
// reached through its seed nodes, or a Sentinel group's primary, reached
// through the sentinels. The zero Deployment is standalone servers, each
// dialled at its address in Env.Addrs.
//
// Either way it is one deployment, not several independent servers: a lock
// that needs N of them (Redlock, redsync-5, raw-5) cannot run on it, and
// Env.Clients refuses it (see Refuses).
type Deployment struct {
	// Cluster are the seed nodes of a Redis Cluster; the clients find the
	// other nodes and the slots from them.
	Cluster []string `json:"cluster,omitempty"`
	// Sentinel names the Sentinel group whose primary is server 0.
	Sentinel *Sentinel `json:"sentinel,omitempty"`
}

// Set reports whether d is a cluster or a Sentinel group.
func (d Deployment) Set() bool { return len(d.Cluster) > 0 || d.Sentinel != nil }

// String is d as -addrs spells it ("" when not Set).
func (d Deployment) String() string {
	switch {
	case len(d.Cluster) > 0:
		return "cluster://" + strings.Join(d.Cluster, ",")
	case d.Sentinel != nil:
		return "sentinel://" + d.Sentinel.Master + "@" + strings.Join(d.Sentinel.Addrs, ",")
	}
	return ""
}

// what names the deployment in messages.
func (d Deployment) what() string {
	if len(d.Cluster) > 0 {
		return "a Redis Cluster is one deployment, not N independent servers"
	}
	return "a Sentinel group is one primary with its replicas, not N independent servers"
}

// Refuses returns why im cannot run on d, a phrase to follow the lock's
// name ("needs 5 independent servers: ..."), or "" when it can: a lock on
// several Redis servers (Nodes > 1) needs them independent, as Redlock's
// majority argument assumes, and a lock whose NoCluster says why cannot
// run on a cluster.
func (d Deployment) Refuses(im *Lock) string {
	switch {
	case !d.Set():
		return ""
	case im.Nodes > 1:
		return fmt.Sprintf("needs %d independent servers: %s", im.Nodes, d.what())
	case len(d.Cluster) > 0 && im.NoCluster != "":
		return "cannot run on a Redis Cluster: " + im.NoCluster
	}
	return ""
}

// client returns server 0's go-redis client on d with the settings of o
// (its Addrs and MasterName are set here): a ClusterClient seeded with the
// cluster's nodes, or a FailoverClient on the group's primary; nil when d
// is not Set.
func (d Deployment) client(o *redis.UniversalOptions) redis.UniversalClient {
	switch {
	case len(d.Cluster) > 0:
		o.Addrs = d.Cluster
		return redis.NewClusterClient(o.Cluster())
	case d.Sentinel != nil:
		return d.Sentinel.client(o)
	}
	return nil
}

// rueidis points opt at server 0 on d: the cluster's seeds (rueidis finds
// the cluster from them) or the sentinels with the group's name.
func (d Deployment) rueidis(opt *rueidis.ClientOption) {
	switch {
	case len(d.Cluster) > 0:
		opt.InitAddress = d.Cluster
	case d.Sentinel != nil:
		d.Sentinel.rueidis(opt)
	}
}

// client returns a FailoverClient on s's primary with the settings of o.
func (s *Sentinel) client(o *redis.UniversalOptions) *redis.Client {
	o.Addrs, o.MasterName = s.Addrs, s.Master
	return redis.NewFailoverClient(o.Failover())
}

// rueidis points opt at s's primary, through the sentinels.
func (s *Sentinel) rueidis(opt *rueidis.ClientOption) {
	opt.InitAddress = s.Addrs
	opt.Sentinel = rueidis.SentinelOption{MasterSet: s.Master}
}

// rigOptions are the rig's client settings (2s timeouts, no retries,
// context deadlines honoured) for a client of d.
func rigOptions() *redis.UniversalOptions { return rig.UniversalOptions() }
