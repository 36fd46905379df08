package rig

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// sentinelMaster is the name under which [Sentinels] monitor the primary.
	sentinelMaster = "locklab"
	// sentinelDownAfter is down-after-milliseconds: how long the primary
	// must be silent before a sentinel thinks it down (SDOWN). 1s keeps a
	// failover near 3s while a busy but live server is never taken for dead.
	sentinelDownAfter = 1000 * time.Millisecond
	// sentinelFailoverTimeout is failover-timeout; a failed attempt is
	// retried after twice this.
	sentinelFailoverTimeout = 3000 * time.Millisecond
	// sentinelReadyTimeout bounds how long a group start waits for the
	// sentinels to see each other and the replicas.
	sentinelReadyTimeout = 15 * time.Second
	// sentinelPoll is the polling interval of readiness and WaitFailover.
	sentinelPoll = 20 * time.Millisecond
)

// Sentinels is a group of redis-sentinel processes monitoring one primary
// under the master name "locklab", with quorum n/2+1,
// down-after-milliseconds 1000 and failover-timeout 3000, so that a
// failover completes about 3s after the primary stops answering. Its
// methods are safe for concurrent use.
type Sentinels struct {
	dir   string
	procs []*sentinelProc
	once  sync.Once
}

// StartSentinels starts n sentinels monitoring primary for a test and
// closes them in tb.Cleanup; on failure it fails the test, and it skips
// the test (see [RequireControl]) when servers are external. Attach the
// replicas first ([Node.ReplicaOf]): the group is ready only when every
// sentinel knows each replica the primary reports. When the test fails,
// the tail of each sentinel's log is logged.
func StartSentinels(tb testing.TB, primary *Node, n int) *Sentinels {
	tb.Helper()
	RequireControl(tb)
	s, err := NewSentinels(context.Background(), primary, n)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			for _, p := range s.procs {
				tb.Logf("redis-sentinel %s log (last 30 lines):\n%s", p.addr(), p.logTail(30))
			}
		}
		_ = s.Close()
	})
	return s
}

// NewSentinels starts n sentinels monitoring primary, as [StartSentinels]
// does, and returns once the group is ready: every sentinel answers,
// reports num-other-sentinels == n-1 with a live link to each of them, and
// has a fresh INFO from the primary and from every replica the primary
// reports in INFO replication. (A fault injected before that makes a
// failover take about 16s instead of about 3s.) The caller must Close the
// group.
//
// The sentinels are started already knowing each other and the replicas
// (sentinel myid, known-sentinel and known-replica lines in each config
// file, as sentinel itself writes them), so readiness takes about a second
// (a sentinel that found a peer not yet listening retries the link after
// 1s) instead of the 2s or more that discovery through hello messages
// takes. Each sentinel has its own writable config file and log in
// a temporary directory. The binary is redis-sentinel from PATH, or, when
// that is missing or LOCKLAB_REDIS_SERVER names a server binary,
// "redis-server <conf> --sentinel".
func NewSentinels(ctx context.Context, primary *Node, n int) (*Sentinels, error) {
	if n < 1 {
		return nil, fmt.Errorf("rig: sentinels: n = %d; want at least 1", n)
	}
	if primary == nil {
		return nil, errors.New("rig: sentinels: nil primary")
	}
	bin, args, err := sentinelCommand()
	if err != nil {
		return nil, err
	}
	replicas, err := replicaAddrs(ctx, primary)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "locklab-sentinel-")
	if err != nil {
		return nil, fmt.Errorf("rig: %w", err)
	}
	s := &Sentinels{dir: dir}
	// Free ports may be taken before a sentinel binds them; every config
	// names every port, so a clash restarts the whole group.
	err = onFreePort(addrInUse, func() error {
		err := s.start(ctx, bin, args, primary.Addr(), replicas, n)
		if err != nil {
			s.kill()
		}
		return err
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := s.waitReady(ctx, primary.Addr(), replicas); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// sentinelCommand returns the binary and leading arguments that run a
// sentinel from a config file appended after them.
func sentinelCommand() (string, []string, error) {
	p, err := chooseProvider()
	if err != nil {
		return "", nil, err
	}
	ep, ok := p.(execProvider)
	if !ok {
		return "", nil, fmt.Errorf("rig: sentinels need redis-server processes; provider %s: %w", p.name(), ErrNoControl)
	}
	if os.Getenv("LOCKLAB_REDIS_SERVER") == "" && !Valkey() {
		if bin, err := exec.LookPath("redis-sentinel"); err == nil {
			return bin, nil, nil
		}
	}
	return ep.bin, []string{"--sentinel"}, nil
}

// replicaAddrs returns the addresses of the replicas primary reports
// (slaveN:ip=...,port=... in INFO replication).
func replicaAddrs(ctx context.Context, primary *Node) ([]string, error) {
	info, err := primary.Info(ctx, "replication")
	if err != nil {
		return nil, fmt.Errorf("rig: sentinels: INFO replication on primary %s: %w", primary.Addr(), err)
	}
	var addrs []string
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(k, "slave") || !strings.Contains(v, "ip=") {
			continue
		}
		f := map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			if a, b, ok := strings.Cut(kv, "="); ok {
				f[a] = b
			}
		}
		addrs = append(addrs, net.JoinHostPort(f["ip"], f["port"]))
	}
	return addrs, nil
}

func (s *Sentinels) start(ctx context.Context, bin string, args []string, primary string, replicas []string, n int) error {
	s.procs = make([]*sentinelProc, n)
	used := map[int]bool{}
	for i := range s.procs {
		port, err := freePort()
		for err == nil && used[port] { // a closed :0 listener's port can come back at once
			port, err = freePort()
		}
		if err != nil {
			return err
		}
		used[port] = true
		id := make([]byte, 20)
		_, _ = rand.Read(id)
		s.procs[i] = &sentinelProc{
			dir:  filepath.Join(s.dir, strconv.Itoa(i)),
			port: port,
			id:   hex.EncodeToString(id),
		}
	}
	for _, p := range s.procs {
		if err := os.MkdirAll(p.dir, 0o755); err != nil {
			return fmt.Errorf("rig: %w", err)
		}
		if err := os.WriteFile(p.confPath(), []byte(s.config(p, primary, replicas)), 0o644); err != nil {
			return fmt.Errorf("rig: %w", err)
		}
		if err := p.start(bin, append(append([]string(nil), p.confPath()), args...)); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, defaultReadyTimeout)
	defer cancel()
	for _, p := range s.procs {
		if err := p.waitPing(ctx); err != nil {
			return err
		}
	}
	return nil
}

// config returns p's config file: the monitored primary and, as sentinel
// writes them after discovery, its own id, the other sentinels and the
// replicas.
func (s *Sentinels) config(p *sentinelProc, primary string, replicas []string) string {
	host, port, _ := net.SplitHostPort(primary)
	m := sentinelMaster
	var b strings.Builder
	fmt.Fprintf(&b, "port %d\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\n", p.port)
	fmt.Fprintf(&b, "dir %q\nlogfile \"\"\n", p.dir)
	fmt.Fprintf(&b, "proc-title-template \"%s {listen-addr} {server-mode}\"\n", procMarker)
	fmt.Fprintf(&b, "sentinel myid %s\n", p.id)
	fmt.Fprintf(&b, "sentinel monitor %s %s %s %d\n", m, host, port, len(s.procs)/2+1)
	fmt.Fprintf(&b, "sentinel down-after-milliseconds %s %d\n", m, sentinelDownAfter.Milliseconds())
	fmt.Fprintf(&b, "sentinel failover-timeout %s %d\n", m, sentinelFailoverTimeout.Milliseconds())
	fmt.Fprintf(&b, "sentinel parallel-syncs %s 1\n", m)
	for _, o := range s.procs {
		if o != p {
			fmt.Fprintf(&b, "sentinel known-sentinel %s 127.0.0.1 %d %s\n", m, o.port, o.id)
		}
	}
	for _, r := range replicas {
		rh, rp, _ := net.SplitHostPort(r)
		fmt.Fprintf(&b, "sentinel known-replica %s %s %s\n", m, rh, rp)
	}
	return b.String()
}

// waitReady polls every sentinel until it sees the others over live links,
// the primary and every replica.
func (s *Sentinels) waitReady(ctx context.Context, primary string, replicas []string) error {
	ctx, cancel := context.WithTimeout(ctx, sentinelReadyTimeout)
	defer cancel()
	for _, p := range s.procs {
		c := p.client()
		var last error
		for {
			if last = sentinelReady(ctx, c, primary, replicas, len(s.procs)-1); last == nil {
				break
			}
			select {
			case <-ctx.Done():
				_ = c.Close()
				return fmt.Errorf("rig: sentinel %s not ready after %v: %w; log:\n%s",
					p.addr(), sentinelReadyTimeout, last, p.logTail(20))
			case <-time.After(sentinelPoll):
			}
		}
		_ = c.Close()
	}
	return nil
}

// sentinelReady returns nil when c sees the primary, others other
// sentinels and all replicas, all with live links, or else what is
// missing.
func sentinelReady(ctx context.Context, c *redis.SentinelClient, primary string, replicas []string, others int) error {
	m, err := c.Master(ctx, sentinelMaster).Result()
	if err != nil {
		return err
	}
	if got := net.JoinHostPort(m["ip"], m["port"]); got != primary || m["flags"] != "master" {
		return fmt.Errorf("master %s flags %q; want %s flags master", got, m["flags"], primary)
	}
	if m["num-other-sentinels"] != strconv.Itoa(others) {
		return fmt.Errorf("num-other-sentinels %s; want %d", m["num-other-sentinels"], others)
	}
	if !fresh(m["info-refresh"]) {
		return fmt.Errorf("no INFO from the primary yet (info-refresh %s ms)", m["info-refresh"])
	}
	peers, err := c.Sentinels(ctx, sentinelMaster).Result()
	if err != nil {
		return err
	}
	for _, o := range peers {
		if o["flags"] != "sentinel" {
			return fmt.Errorf("sentinel %s:%s flags %q; want a live link", o["ip"], o["port"], o["flags"])
		}
	}
	reps, err := c.Replicas(ctx, sentinelMaster).Result()
	if err != nil {
		return err
	}
	for _, want := range replicas {
		ok := false
		for _, r := range reps {
			if net.JoinHostPort(r["ip"], r["port"]) == want &&
				r["flags"] == "slave" && r["master-link-status"] == "ok" && fresh(r["info-refresh"]) {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("replica %s not seen with a live link and fresh INFO; replicas: %v", want, reps)
		}
	}
	return nil
}

// fresh reports whether an info-refresh field (ms since the last INFO
// reply; huge before the first) shows that INFO has been read.
func fresh(ms string) bool {
	v, err := strconv.ParseInt(ms, 10, 64)
	return err == nil && v < 10_000
}

// Addrs returns the sentinels' "127.0.0.1:port" addresses, for example for
// redis.FailoverOptions.SentinelAddrs.
func (s *Sentinels) Addrs() []string {
	addrs := make([]string, len(s.procs))
	for i, p := range s.procs {
		addrs[i] = p.addr()
	}
	return addrs
}

// MasterName returns the name under which the primary is monitored
// ("locklab").
func (s *Sentinels) MasterName() string { return sentinelMaster }

// MasterAddr returns the primary's address as the first sentinel that
// answers reports it (SENTINEL GET-MASTER-ADDR-BY-NAME).
func (s *Sentinels) MasterAddr(ctx context.Context) (string, error) {
	var errs []error
	for _, p := range s.procs {
		addr, err := p.masterAddr(ctx)
		if err == nil {
			return addr, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("rig: no sentinel answered: %w", errors.Join(errs...))
}

// WaitFailover polls SENTINEL GET-MASTER-ADDR-BY-NAME on every sentinel
// until a quorum of them (n/2+1) name the same address other than oldAddr,
// and returns it. Sentinel switches the address only after the promoted
// replica reported role:master, so it accepts writes by then. Sentinels that
// do not answer (killed, paused) count as not agreeing. It returns ctx's
// error, with the last answers, when ctx ends first.
func (s *Sentinels) WaitFailover(ctx context.Context, oldAddr string) (string, error) {
	quorum := len(s.procs)/2 + 1
	for {
		votes := map[string]int{}
		var seen []string
		for _, p := range s.procs {
			addr, err := p.masterAddr(ctx)
			if err != nil {
				seen = append(seen, err.Error())
				continue
			}
			seen = append(seen, addr)
			if addr != oldAddr {
				votes[addr]++
				if votes[addr] >= quorum {
					return addr, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("rig: no failover from %s: %w; sentinels say %v", oldAddr, ctx.Err(), seen)
		case <-time.After(sentinelPoll):
		}
	}
}

// Close kills every sentinel (SIGCONT first, so a paused one dies too),
// waits for them and removes their directory. It is safe to call more than
// once.
func (s *Sentinels) Close() error {
	var err error
	s.once.Do(func() {
		s.kill()
		err = os.RemoveAll(s.dir)
	})
	return err
}

func (s *Sentinels) kill() {
	for _, p := range s.procs {
		if p != nil {
			p.kill()
		}
	}
}

// sentinelProc is one redis-sentinel process.
type sentinelProc struct {
	dir  string
	port int
	id   string // sentinel myid, 40 hex digits

	d daemon // the process; start sets what it runs
}

func (p *sentinelProc) addr() string     { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }
func (p *sentinelProc) confPath() string { return filepath.Join(p.dir, "sentinel.conf") }
func (p *sentinelProc) logPath() string  { return filepath.Join(p.dir, "sentinel.log") }

func (p *sentinelProc) start(bin string, args []string) error {
	p.d.what = fmt.Sprintf("redis-sentinel on port %d", p.port)
	p.d.path, p.d.args, p.d.dir, p.d.logPath = bin, args, p.dir, p.logPath()
	return p.d.start()
}

// waitPing waits until the sentinel answers PING, as itself.
func (p *sentinelProc) waitPing(ctx context.Context) error {
	return p.d.waitPing(ctx, p.addr(), p.checkID)
}

// checkID makes sure the process answering on p's port is p (it reports
// the myid p was given), not another server that took the port first.
func (p *sentinelProc) checkID(ctx context.Context) error {
	c := p.client()
	defer c.Close()
	cmd := redis.NewStringCmd(ctx, "sentinel", "myid")
	_ = c.Process(ctx, cmd)
	if id, err := cmd.Result(); err != nil || id != p.id {
		return fmt.Errorf("rig: sentinel port %d answered by another process (myid %q, %v): %w", p.port, id, err, errAddrInUse)
	}
	return nil
}

func (p *sentinelProc) client() *redis.SentinelClient {
	return redis.NewSentinelClient(probeOptions(p.addr(), 500*time.Millisecond))
}

func (p *sentinelProc) masterAddr(ctx context.Context) (string, error) {
	c := p.client()
	defer c.Close()
	hp, err := c.GetMasterAddrByName(ctx, sentinelMaster).Result()
	if err != nil {
		return "", fmt.Errorf("sentinel %s: %w", p.addr(), err)
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("sentinel %s: GET-MASTER-ADDR-BY-NAME = %v", p.addr(), hp)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

func (p *sentinelProc) kill() { _ = p.d.kill() }

func (p *sentinelProc) logTail(lines int) string { return p.d.logTail(lines) }
