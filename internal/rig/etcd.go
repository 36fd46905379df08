package rig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/proc"
)

// EtcdInstallHint is the message shown when no etcd binary can be found.
const EtcdInstallHint = `no etcd server available to locklab: etcd is not on PATH (LOCKLAB_ETCD can name the binary).
Install it with "make deps" (Debian/Ubuntu, as root: apt-get install -y etcd-server;
macOS: brew install etcd), or build one: go install go.etcd.io/etcd/server/v3@v3.6.16 (about 5 min).`

const (
	// etcdReadyTimeout bounds a cluster's start and a member's restart:
	// a 3-member cluster on loopback is healthy in about 2s, more on a
	// loaded machine.
	etcdReadyTimeout = 30 * time.Second
	// etcdStopTimeout is how long a member may take to exit on SIGTERM.
	etcdStopTimeout = 10 * time.Second
	// etcdProbeTimeout bounds one health or status request.
	etcdProbeTimeout = time.Second
	// etcdMaxMembers bounds what a test may ask for.
	etcdMaxMembers = 7
)

// EtcdBinary returns the etcd server binary the rig runs: LOCKLAB_ETCD, or
// etcd on PATH. Its error carries [EtcdInstallHint].
func EtcdBinary() (string, error) {
	if b := os.Getenv("LOCKLAB_ETCD"); b != "" {
		return b, nil
	}
	if b, err := exec.LookPath("etcd"); err == nil {
		return b, nil
	}
	return "", errors.New(EtcdInstallHint)
}

// Etcd is a cluster of etcd server processes on loopback, each member with
// a free client port, a free peer port and a data directory of its own
// under one temporary directory. Its methods are safe for concurrent use.
//
// Faults are real, member by member: [EtcdMember.Kill] (SIGKILL),
// [EtcdMember.Pause] (SIGSTOP: a leader that stops answering, as in a
// long GC pause or a stalled VM), [EtcdMember.Restart] (a new process on
// the same ports and data directory, rejoining the cluster), and a
// faultproxy in front of [EtcdMember.Endpoint] for partitions between a
// client and a member. Every member's process title starts with
// "locklab-rig" (see [SystemStrays]).
type Etcd struct {
	bin     string
	token   string // --initial-cluster-token, unique per cluster
	initial string // --initial-cluster
	members []*EtcdMember
	args    []string // extra server arguments
	daemonGroup
}

// EtcdMember is one member of an [Etcd] cluster. When a paused or
// killed member led, the other members elect a new leader.
type EtcdMember struct {
	cluster    *Etcd
	name       string
	clientPort int
	peerPort   int
	dataDir    string
	serverProcess

	mu      sync.Mutex // protects started
	started bool       // it has joined once: a restart rejoins as existing
}

// EtcdOption configures a cluster started by [NewEtcd] or [StartEtcd].
type EtcdOption func(*Etcd)

// WithEtcdArgs appends raw etcd arguments to every member's command line,
// for example WithEtcdArgs("--election-timeout", "500"). The default is
// none: etcd's own defaults (heartbeat 100ms, election timeout 1s, fsync on).
func WithEtcdArgs(args ...string) EtcdOption {
	return func(e *Etcd) { e.args = append(e.args, args...) }
}

// NewEtcd starts a cluster of n members (1 to 7; 3 tolerates the loss of
// one) and waits until every member is healthy and they agree on a leader.
// The caller must Close it.
func NewEtcd(ctx context.Context, n int, opts ...EtcdOption) (*Etcd, error) {
	if n < 1 || n > etcdMaxMembers {
		return nil, fmt.Errorf("rig: etcd cluster of %d members; want 1 to %d", n, etcdMaxMembers)
	}
	bin, err := EtcdBinary()
	if err != nil {
		return nil, err
	}
	return startRetried("address already in use", func() (*Etcd, error) { return newEtcd(ctx, bin, n, opts) })
}

func newEtcd(ctx context.Context, bin string, n int, opts []EtcdOption) (*Etcd, error) {
	dir, err := os.MkdirTemp("", "locklab-etcd-")
	if err != nil {
		return nil, fmt.Errorf("rig: %w", err)
	}
	e := &Etcd{bin: bin, token: "locklab-" + filepath.Base(dir), daemonGroup: daemonGroup{dir: dir}}
	for _, o := range opts {
		o(e)
	}
	var peers []string
	for i := range n {
		m := &EtcdMember{cluster: e, name: "m" + strconv.Itoa(i), dataDir: filepath.Join(dir, "m"+strconv.Itoa(i))}
		if m.clientPort, err = freePort(); err == nil {
			m.peerPort, err = freePort()
		}
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		m.d = &daemon{
			what:    fmt.Sprintf("etcd member %s (%s)", m.name, m.Endpoint()),
			path:    bin,
			argv0:   procMarker,
			dir:     dir,
			logPath: filepath.Join(dir, m.name+".log"),
		}
		e.members = append(e.members, m)
		e.add(m.d, m.Endpoint())
		peers = append(peers, m.name+"="+m.peerURL())
	}
	e.initial = strings.Join(peers, ",")
	err = e.boot(
		func(i int) error { return e.members[i].launch() },
		func() error { return e.waitHealthy(ctx, true) },
	)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// StartEtcd starts a cluster for a test, as [NewEtcd] does, and closes it
// in tb.Cleanup. When the test fails, the tail of each member's log is
// logged. Without an etcd binary the test fails with [EtcdInstallHint].
func StartEtcd(tb testing.TB, n int, opts ...EtcdOption) *Etcd {
	tb.Helper()
	return startForTest(tb, func() (*Etcd, error) { return NewEtcd(context.Background(), n, opts...) })
}

// Members returns the members in the order they were created.
func (e *Etcd) Members() []*EtcdMember { return append([]*EtcdMember(nil), e.members...) }

// Endpoints returns every member's client address, "127.0.0.1:port".
func (e *Etcd) Endpoints() []string { return e.clientAddrs() }

// Version returns the server version the first answering member reports.
func (e *Etcd) Version(ctx context.Context) (string, error) {
	var errs []error
	for _, m := range e.members {
		var v struct {
			Server string `json:"etcdserver"`
		}
		if err := m.get(ctx, "/version", &v); err != nil {
			errs = append(errs, err)
			continue
		}
		return v.Server, nil
	}
	return "", errors.Join(errs...)
}

// WaitHealthy waits until every running member reports itself healthy and
// all of them name the same leader, for at most 30s. Members that are not
// running (killed, stopped) are left out; a paused one is waited for.
func (e *Etcd) WaitHealthy(ctx context.Context) error { return e.waitHealthy(ctx, false) }

// waitHealthy is WaitHealthy; with all, a member that is not running fails
// the wait at once (at start, every member must come up).
func (e *Etcd) waitHealthy(ctx context.Context, all bool) error {
	ctx, cancel := context.WithTimeout(ctx, etcdReadyTimeout)
	defer cancel()
	for {
		err := e.healthy(ctx)
		if err == nil {
			return nil
		}
		for _, m := range e.members {
			if all && !m.d.running() {
				return fmt.Errorf("rig: %s exited at start; log:\n%s", m.d.what, m.LogTail(30))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rig: etcd cluster not healthy after %v: %w", etcdReadyTimeout, err)
		case <-time.After(pollEvery):
		}
	}
}

func (e *Etcd) healthy(ctx context.Context) error {
	leader := ""
	for _, m := range e.members {
		if !m.d.running() {
			continue
		}
		if err := m.health(ctx); err != nil {
			return err
		}
		st, err := m.status(ctx)
		if err != nil {
			return err
		}
		if st.Leader == "" || st.Leader == "0" {
			return fmt.Errorf("%s has no leader", m.name)
		}
		if leader != "" && st.Leader != leader {
			return fmt.Errorf("members disagree on the leader (%s, %s)", leader, st.Leader)
		}
		leader = st.Leader
	}
	if leader == "" {
		return errors.New("no member is running")
	}
	return nil
}

// Leader returns the member the running members name as their leader. A
// paused member cannot answer and is not asked.
func (e *Etcd) Leader(ctx context.Context) (*EtcdMember, error) {
	ids := map[string]*EtcdMember{}
	leader := ""
	var errs []error
	for _, m := range e.members {
		if !m.d.running() || m.paused() {
			continue
		}
		st, err := m.status(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ids[st.Header.MemberID] = m
		if leader == "" && st.Leader != "0" {
			leader = st.Leader
		}
	}
	if m, ok := ids[leader]; ok {
		return m, nil
	}
	if leader != "" {
		return nil, fmt.Errorf("rig: etcd leader %s is not among the members that answered", leader)
	}
	return nil, fmt.Errorf("rig: no etcd member names a leader: %w", errors.Join(errs...))
}

// Close kills every member, waits for them and removes the cluster's
// directory. It is safe to call more than once.
func (e *Etcd) Close() error { return e.closeAll() }

// Name returns the member's name: m0, m1, ...
func (m *EtcdMember) Name() string { return m.name }

// Endpoint returns the member's client address, "127.0.0.1:port".
func (m *EtcdMember) Endpoint() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.clientPort))
}

// String returns the member's name and client address.
func (m *EtcdMember) String() string { return m.name + " (" + m.Endpoint() + ")" }

func (m *EtcdMember) peerURL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(m.peerPort))
}

func (m *EtcdMember) clientURL() string { return "http://" + m.Endpoint() }

func (m *EtcdMember) started0() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.started
}

// launch starts the process: as a new member the first time, rejoining
// with its data directory afterwards.
func (m *EtcdMember) launch() error {
	state := "new"
	if m.started0() {
		state = "existing"
	}
	m.d.args = append([]string{
		"--name", m.name,
		"--data-dir", m.dataDir,
		"--listen-client-urls", m.clientURL(),
		"--advertise-client-urls", m.clientURL(),
		"--listen-peer-urls", m.peerURL(),
		"--initial-advertise-peer-urls", m.peerURL(),
		"--initial-cluster", m.cluster.initial,
		"--initial-cluster-state", state,
		"--initial-cluster-token", m.cluster.token,
		"--logger", "zap",
		"--log-outputs", "stderr",
	}, m.cluster.args...)
	if err := m.d.start(); err != nil {
		return err
	}
	m.mu.Lock()
	m.started = true
	m.mu.Unlock()
	return nil
}

// Stop shuts the member down with SIGTERM and waits until it has exited
// (and released its ports).
func (m *EtcdMember) Stop() error { return m.d.stop(etcdStopTimeout) }

func (m *EtcdMember) paused() bool {
	pid := m.d.pid()
	return pid != 0 && proc.State(pid) == "T"
}

// Restart kills the member if it runs, starts it again on the same ports
// and data directory, and waits until it is healthy, which needs a
// majority of the cluster up.
func (m *EtcdMember) Restart(ctx context.Context) error {
	return m.d.restart(ctx, m.launch, etcdReadyTimeout, m.health)
}

// health asks GET /health, which reports true when the member has a
// leader and can serve.
func (m *EtcdMember) health(ctx context.Context) error {
	var h struct {
		Health string `json:"health"`
	}
	if err := m.get(ctx, "/health", &h); err != nil {
		return err
	}
	if h.Health != "true" {
		return fmt.Errorf("%s reports health %q", m.name, h.Health)
	}
	return nil
}

// etcdStatus is the part of the Maintenance.Status reply the rig reads.
// The gateway spells 64-bit ids as decimal strings.
type etcdStatus struct {
	Header struct {
		MemberID string `json:"member_id"`
	} `json:"header"`
	Leader string `json:"leader"`
}

// status calls Maintenance.Status through etcd's JSON gateway.
func (m *EtcdMember) status(ctx context.Context) (etcdStatus, error) {
	var st etcdStatus
	err := m.do(ctx, http.MethodPost, "/v3/maintenance/status", strings.NewReader("{}"), &st)
	return st, err
}

func (m *EtcdMember) get(ctx context.Context, path string, v any) error {
	return m.do(ctx, http.MethodGet, path, nil, v)
}

// do sends one request to the member's client port, on a connection of its
// own (no keep-alive: nothing lingers after the call), and decodes the
// JSON reply into v.
func (m *EtcdMember) do(ctx context.Context, method, path string, body io.Reader, v any) error {
	ctx, cancel := context.WithTimeout(ctx, etcdProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, m.clientURL()+path, body)
	if err != nil {
		return err
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", m.name, path, resp.Status, strings.TrimSpace(string(b)))
	}
	return json.Unmarshal(b, v)
}
