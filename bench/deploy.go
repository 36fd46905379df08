package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/faults"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/speed"
)

// -addrs schemes besides plain host:port lists.
const (
	schemeCluster  = "cluster://"
	schemeSentinel = "sentinel://"
)

// scRTT is the rtt scenario's name in -scenarios.
const scRTT = "rtt"

// addrsUsage is -addrs's help text.
const addrsUsage = "external servers instead of the rig: host:port,... (standalone servers; 5 needed for 5-node locks), " +
	"cluster://host:port,... (a Redis Cluster's seed nodes: the single-server locks run on a ClusterClient, admin on every primary), or " +
	"sentinel://MASTER@host:port,... (the sentinels of group MASTER: the single-server locks reach its primary through them); " +
	"a cluster or Sentinel group is one deployment: the locks on 5 servers (redlock*, redsync-5, raw-5*), and on a cluster correct and correct+keep (their Notifier refuses one) and rueidislock (see its NoCluster), " +
	"are left out of the default selection and refused by name, and so are the rtt scenario (its proxies front standalone servers) and the fault scoreboard"

// parseAddrs parses -addrs: standalone servers (addrs), or a cluster's seeds
// or a Sentinel group (d). An empty s is the rig.
func parseAddrs(s string) (addrs []string, d registry.Deployment, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, d, nil
	}
	scheme, rest, found := strings.Cut(s, "://")
	if !found {
		addrs, err = parseHostPorts("-addrs", s)
		return addrs, d, err
	}
	switch scheme + "://" {
	case schemeCluster:
		if strings.TrimSpace(rest) == "" {
			return nil, d, fmt.Errorf("-addrs %s: no seed node; want cluster://host:port,host:port,...", s)
		}
		d.Cluster, err = parseHostPorts("-addrs "+schemeCluster, rest)
	case schemeSentinel:
		master, list, ok := strings.Cut(rest, "@")
		if !ok || strings.TrimSpace(master) == "" {
			return nil, d, fmt.Errorf("-addrs %s: no master name; want sentinel://MASTER@host:port,host:port,... (MASTER as in the sentinels' sentinel monitor line)", s)
		}
		if strings.TrimSpace(list) == "" {
			return nil, d, fmt.Errorf("-addrs %s: no sentinel; want sentinel://MASTER@host:port,host:port,...", s)
		}
		d.Sentinel = &registry.Sentinel{Master: strings.TrimSpace(master)}
		d.Sentinel.Addrs, err = parseHostPorts("-addrs "+schemeSentinel, list)
	default:
		return nil, d, fmt.Errorf("-addrs %s: unknown scheme %q; want host:port,..., %shost:port,... or %sMASTER@host:port,...", s, scheme+"://", schemeCluster, schemeSentinel)
	}
	if err != nil {
		return nil, registry.Deployment{}, err
	}
	return nil, d, nil
}

// parseHostPorts is parseNames for a list of host:port addresses.
func parseHostPorts(flagName, s string) ([]string, error) {
	out, err := parseNames(flagName, s)
	if err != nil {
		return nil, err
	}
	for _, a := range out {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return nil, fmt.Errorf("%s: %q is not host:port", flagName, a)
		}
	}
	return out, nil
}

// fitScenarios checks the scenarios against a cluster or Sentinel group
// (c.Deploy): the fault scoreboard is refused (it faults independent
// servers it can reach one by one), and so is the rtt scenario when
// -scenarios names it; otherwise (the -quick preset, the default list)
// rtt is left out, with the reason on stderr.
func fitScenarios(c *speed.Config, scenariosSet bool, stderr io.Writer) error {
	if !c.Deploy.Set() {
		return nil
	}
	if slices.Contains(c.Scenarios, faults.ScFaults) {
		return fmt.Errorf("-scenarios %s: the fault scoreboard needs independent standalone servers to fault one by one; %s is one deployment (run it on the rig or on -addrs host:port,...)", faults.ScFaults, c.Deploy)
	}
	if !slices.Contains(c.Scenarios, scRTT) {
		return nil
	}
	why := fmt.Sprintf("its latency proxies sit in front of standalone servers, and the clients of %s dial the addresses the nodes or sentinels report, not the proxies", c.Deploy)
	if scenariosSet {
		return fmt.Errorf("-scenarios %s: %s", scRTT, why)
	}
	c.Scenarios = slices.DeleteFunc(slices.Clone(c.Scenarios), func(s string) bool { return s == scRTT })
	fmt.Fprintf(stderr, "bench: the rtt scenario is left out: %s\n", why)
	return nil
}

// fitImpls drops from impls, or refuses, the locks that cannot run on
// cfg.Deploy (registry.Deployment.Refuses: the locks on 5 independent
// servers). A lock named exactly in -impls is refused with the reason; one
// that only the default selection or a glob brought in is left out, with
// the reason on stderr.
func fitImpls(impls []*registry.Lock, cfg *speed.Config, stderr io.Writer) ([]*registry.Lock, error) {
	if !cfg.Deploy.Set() {
		return impls, nil
	}
	var out []*registry.Lock
	var reasons []string          // in order of first appearance
	left := map[string][]string{} // reason: the locks left out for it
	for _, im := range impls {
		r := cfg.Deploy.Refuses(im)
		switch {
		case r == "":
			out = append(out, im)
		case slices.Contains(cfg.Impls, im.Name):
			return nil, fmt.Errorf("-impls %s with -addrs %s: %s %s", im.Name, cfg.Deploy, im.Name, r)
		default:
			if left[r] == nil {
				reasons = append(reasons, r)
			}
			left[r] = append(left[r], im.Name)
		}
	}
	var notes []string
	for _, r := range reasons {
		notes = append(notes, strings.Join(left[r], ", ")+": "+r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-impls: no selected lock runs on %s (%s)", cfg.Deploy, strings.Join(notes, "; "))
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "bench: left out on %s: %s\n", cfg.Deploy, n)
	}
	return out, nil
}

// startServers starts the servers of the run: the rig's, -addrs' standalone
// ones (env.StartKinds), or -addrs' cluster or Sentinel group
// (env.StartDeployed).
func startServers(ctx context.Context, cfg *speed.Config, nodes int) (*env.Servers, error) {
	if !cfg.Deploy.Set() {
		return env.StartKinds(ctx, cfg.Addrs, nodes, cfg.Servers)
	}
	kind := ""
	if len(cfg.Servers) == 1 {
		kind = cfg.Servers[0]
	}
	return env.StartDeployed(ctx, cfg.Deploy, kind)
}

// describeServers is machine.json's servers line for external servers.
func describeServers(srv *env.Servers) string {
	if d := srv.Describe(); d != "" {
		return d
	}
	return "external: " + strings.Join(srv.Addrs, ",")
}
