package redlock

import (
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/args"
)

// This file is New's check of its nodes: each client a node of its own,
// counted once however its address is spelled, and a Notifier on the same
// nodes in the same order.

func (m *Mutex) validate() error {
	if len(m.clients) == 0 {
		return invalid("no clients")
	}
	same := make([]string, len(m.clients)) // canonical addresses
	for i, c := range m.clients {
		if args.IsNil(c) {
			return invalid("nil client: clients[%d]", i)
		}
		m.addrs[i] = addrOf(c)
		if m.addrs[i] == "" {
			continue
		}
		same[i] = canonicalAddr(m.addrs[i])
		if j := slices.Index(same[:i], same[i]); j >= 0 {
			return invalid("clients %d and %d both address %s (%s and %s); each node must count once", j, i, same[i], m.addrs[j], m.addrs[i])
		}
	}
	if m.key == "" {
		return invalid("empty key")
	}
	if n := m.o.notifier; n != nil {
		return n.check(m.addrs)
	}
	return nil
}

// check returns an error wrapping ErrInvalid unless the Notifier watches
// the nodes at addrs, in that order (where both sides know the address).
func (n *Notifier) check(addrs []string) error {
	if len(n.addrs) != len(addrs) {
		return invalid("the notifier watches %d nodes, the Mutex uses %d", len(n.addrs), len(addrs))
	}
	for i, a := range addrs {
		if a != "" && n.addrs[i] != "" && a != n.addrs[i] {
			return invalid("node %d is %s for the Mutex but %s for the notifier", i, a, n.addrs[i])
		}
	}
	return nil
}

// addrOf returns the address of the node behind c, or "" if c does not
// say (a go-redis *redis.Client does, through Options).
func addrOf(c any) string {
	if o, ok := c.(interface{ Options() *redis.Options }); ok {
		return o.Options().Addr
	}
	return ""
}

// canonicalAddr returns one spelling of a node's address, so that one
// server named two ways counts once: "127.0.0.1:7000",
// "[::ffff:127.0.0.1]:7000" and "localhost:7000" are the same node.
func canonicalAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return strings.ToLower(addr)
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || host == "" {
		host = "127.0.0.1"
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		if ip.IsLoopback() {
			ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		}
		host = ip.String()
	}
	return net.JoinHostPort(host, port)
}
