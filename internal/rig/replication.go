package rig

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReplicaOf makes n a replica of the server at primaryAddr and waits until
// the replica reports master_link_status:up (the initial sync has finished)
// and the primary lists it as online (it streams new writes to it), so a
// WAIT right after counts it. primaryAddr may be another node's address or a fault
// proxy's in front of it (to cut the replication link on demand).
func (n *Node) ReplicaOf(ctx context.Context, primaryAddr string) error {
	host, port, err := net.SplitHostPort(primaryAddr)
	if err != nil {
		return fmt.Errorf("rig: replicaof %q: %w", primaryAddr, err)
	}
	c := redis.NewClient(probeOptions(n.addr, 2*time.Second))
	defer c.Close()
	if err := c.SlaveOf(ctx, host, port).Err(); err != nil {
		return fmt.Errorf("rig: %s REPLICAOF %s: %w", n.addr, primaryAddr, err)
	}
	if err := n.WaitLinkUp(ctx); err != nil {
		return err
	}
	// The link is up once the replica has loaded the primary's data, but
	// a WAIT right after can still count no replica for a while (after a
	// diskless full sync the primary streams to it only once it is online,
	// on its first ACK). Wait until a probe write reaches every replica
	// the primary lists, this one included.
	primary := &Node{addr: primaryAddr}
	for {
		err := primary.WaitReplicas(ctx, -1, 100*time.Millisecond)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rig: %s follows %s but writes do not reach it: %w", n.addr, primaryAddr, err)
		default:
		}
	}
}

// WaitLinkUp waits until n, a replica, reports master_link_status:up.
func (n *Node) WaitLinkUp(ctx context.Context) error {
	return n.waitInfo(ctx, "replication", "master_link_status:up")
}

// Promote turns a replica into a primary (REPLICAOF NO ONE) and waits until
// it reports role:master.
func (n *Node) Promote(ctx context.Context) error {
	c := redis.NewClient(probeOptions(n.addr, 2*time.Second))
	defer c.Close()
	if err := c.SlaveOf(ctx, "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("rig: %s REPLICAOF NO ONE: %w", n.addr, err)
	}
	return n.waitInfo(ctx, "replication", "role:master")
}

// Info returns the named INFO section.
func (n *Node) Info(ctx context.Context, section string) (string, error) {
	c := redis.NewClient(probeOptions(n.addr, 2*time.Second))
	defer c.Close()
	return c.Info(ctx, section).Result()
}

// waitInfo polls INFO section every 5ms until it contains line.
func (n *Node) waitInfo(ctx context.Context, section, line string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := redis.NewClient(probeOptions(n.addr, 500*time.Millisecond))
	defer c.Close()
	last := ""
	for {
		info, err := c.Info(ctx, section).Result()
		if err == nil {
			last = info
			for _, l := range strings.Split(info, "\n") {
				if strings.TrimSpace(l) == line {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rig: %s: no %q in INFO %s: %w; last:\n%s", n.addr, line, section, ctx.Err(), last)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// WaitReplicas waits until replicas replicas of n, a primary, have every
// write n accepted so far: it writes a probe key (SET, then DEL) and runs
// WAIT on the same connection, which counts only that connection's writes.
// Replication keeps order, so once the probe is acknowledged, so is
// everything before it. It fails when fewer acknowledge within timeout.
//
// replicas < 0 means every replica the primary lists (connected_slaves).
func (n *Node) WaitReplicas(ctx context.Context, replicas int, timeout time.Duration) error {
	c := redis.NewClient(probeOptions(n.addr, timeout+2*time.Second))
	defer c.Close()
	if replicas < 0 {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return fmt.Errorf("rig: %s: %w", n.addr, err)
		}
		replicas = 0
		for _, l := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "connected_slaves:"); ok {
				replicas, _ = strconv.Atoi(v)
			}
		}
	}
	conn := c.Conn()
	defer conn.Close()
	const probe = "locklab-rig:replication-probe"
	if err := conn.Set(ctx, probe, "1", 0).Err(); err != nil {
		return fmt.Errorf("rig: %s: probe write: %w", n.addr, err)
	}
	if err := conn.Del(ctx, probe).Err(); err != nil {
		return fmt.Errorf("rig: %s: probe write: %w", n.addr, err)
	}
	acked, err := conn.Wait(ctx, replicas, timeout).Result()
	if err != nil {
		return fmt.Errorf("rig: %s: WAIT %d: %w", n.addr, replicas, err)
	}
	if acked < int64(replicas) {
		return fmt.Errorf("rig: %s: %d of %d replicas acknowledged within %v", n.addr, acked, replicas, timeout)
	}
	return nil
}
