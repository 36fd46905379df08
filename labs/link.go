package labs

import "github.com/locklab/locklab/internal/faultproxy"

// Link is a client's network path to one server, through a fault proxy,
// so that a scenario can cut it off for real: the proxy holds every packet,
// as a partition does, and no process is touched (labs 13 and 14 cut a
// holder off from ZooKeeper and from PostgreSQL). Clients that should
// reach the server only through the link use [Link.Addr].
type Link struct {
	s     *Scene
	proxy *faultproxy.Proxy
}

// Link starts a link to the server at target, open until [Link.Cut].
func (s *Scene) Link(target string) *Link {
	s.t.Helper()
	return &Link{s: s, proxy: faultproxy.Start(s.t, target)}
}

// Addr returns the address that reaches the server through the link.
func (l *Link) Addr() string { return l.proxy.Addr() }

// Cut holds every packet on the link, in both directions, and says so on
// the timeline: "network: <who> (its packets held)". who says who is cut
// off from what ("A cut off from ZooKeeper").
func (l *Link) Cut(who string) {
	l.proxy.Blackhole()
	l.s.Fault("network: %s (its packets held)", who)
}

// Heal lets the held packets and new ones through again, and says so.
func (l *Link) Heal() {
	l.proxy.Heal()
	l.s.Fault("network heals")
}
