package etcdlock_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/locklab/locklab/etcdlock"
	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
)

// uwTTL is the lease of a's holds in the user world (and of a's session
// with WithSession): long enough to outlast an election after the
// leader's SIGKILL, short enough to keep the faults that end it brief.
const uwTTL = 5 * time.Second

// faulty is a's connection in the user world: a client whose connections
// go through a wire (wire_test.go: one connection held, given up, its
// reply lost) and, under it, a faultproxy (latency, partition) to one
// member that did not lead when the connection was made.
type faulty struct {
	cluster *rig.Etcd
	wire    *wire
	proxy   *faultproxy.Proxy
	session *concurrency.Session // nil: a lease per hold
}

// faultyConns maps a's client to its faulty: Kind.New and the faults'
// Inject get only the client.
var faultyConns sync.Map // *clientv3.Client -> *faulty

func faultyOf(t *testing.T, c *clientv3.Client) *faulty {
	t.Helper()
	f, ok := faultyConns.Load(c)
	if !ok {
		t.Fatal("not a faulty connection")
	}
	return f.(*faulty)
}

// TestUserWorld runs the shared user-world fault suite of internal/locktest
// over etcdlock, with a lease per hold and with a shared session, on a
// 3-member cluster of its own (one fault kills its leader).
func TestUserWorld(t *testing.T) {
	e := rig.StartEtcd(t, 3)
	for _, session := range []bool{false, true} {
		name := "own lease"
		if session {
			name = "shared session"
		}
		t.Run(name, func(t *testing.T) {
			k := kind
			k.Conn = func(t *testing.T) *clientv3.Client { return client(t, clusterFor(t, e).Endpoints()...) }
			k.New = func(c *clientv3.Client, key string, o locktest.Options) locktest.Fenced {
				opts := []etcdlock.Option{etcdlock.WithHook(o.Hook), etcdlock.WithObserver(o.Observer), etcdlock.WithTTL(uwTTL)}
				if f, ok := faultyConns.Load(c); ok && f.(*faulty).session != nil {
					opts = append(opts, etcdlock.WithSession(f.(*faulty).session))
				}
				return etcdlock.New(c, key, opts...)
			}
			if session {
				// A claim an Unlock or a withdraw left on the session's
				// lease is withdrawn again in the background every second.
				k.Detach = 5 * time.Second
			}
			w := locktest.World[*clientv3.Client]{
				Faulty:  func(t *testing.T) *clientv3.Client { return newFaulty(t, clusterFor(t, e), session) },
				Faults:  userFaults(session),
				Call:    15 * time.Second,
				Recover: 2 * uwTTL,
			}
			locktest.UserWorld(t, k, w, lockKey)
		})
	}
}

// leaderKilled names the fault that kills etcd's leader.
const leaderKilled = "leader SIGKILLed and restarted while holding"

// ownClusters holds the clusters of clusterFor.
var ownClusters sync.Map // *testing.T -> *rig.Etcd

// clusterFor returns the cluster the user-world subtest t runs on: shared,
// except for the fault that kills and restarts etcd's leader, which gets
// a cluster of its own, closed when t ends. The restarted member's process
// waiter (internal/rig) lives as long as the member, and UserWorld's leak
// check at the end of each fault would count it as a leak; on its own
// cluster it ends before the check.
func clusterFor(t *testing.T, shared *rig.Etcd) *rig.Etcd {
	t.Helper()
	if !strings.HasSuffix(t.Name(), "/"+strings.ReplaceAll(leaderKilled, " ", "_")) {
		return shared
	}
	if e, ok := ownClusters.Load(t); ok {
		return e.(*rig.Etcd)
	}
	e := rig.StartEtcd(t, 3)
	ownClusters.Store(t, e)
	t.Cleanup(func() { ownClusters.Delete(t) })
	return e
}

// newFaulty makes a's connection: a wire over a proxy to a member that is
// not the leader now (so that killing the leader tests a failover, not a
// lost connection), with a session of its own if session.
func newFaulty(t *testing.T, e *rig.Etcd, session bool) *clientv3.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	target := e.Members()[0]
	for _, m := range e.Members() {
		if m != leader {
			target = m
			break
		}
	}
	f := &faulty{cluster: e, proxy: faultproxy.Start(t, target.Endpoint())}
	f.wire = newWire(t, f.proxy.Addr())
	c := f.wire.client(t)
	if session {
		if f.session, err = concurrency.NewSession(c, concurrency.WithTTL(int(uwTTL/time.Second))); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.session.Close() })
	}
	faultyConns.Store(c, f)
	t.Cleanup(func() { faultyConns.Delete(c) })
	return c
}

// serves waits until c answers again, after a fault healed.
func serves(t *testing.T, c *clientv3.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := c.Get(ctx, "/locklab/ping"); err != nil {
		t.Fatalf("a's client after the fault healed: %v", err)
	}
}

// userFaults are etcdlock's faults of the user's world; those that need a
// lease per hold (a Revoke, a lease that expires for Lock to see) only
// without a session.
func userFaults(session bool) []locktest.Fault[*clientv3.Client] {
	faults := []locktest.Fault[*clientv3.Client]{
		{
			// The claim reaches etcd and lands; its reply is lost (the
			// connection closes). clientv3 does not send a Txn again, so
			// Lock fails and withdraws the claim; a Lock again works.
			Name: "claim reply lost", During: locktest.DuringLock,
			Inject: func(t *testing.T, c *clientv3.Client) func() {
				w := faultyOf(t, c).wire
				w.beforeCall(methodTxn, func(any) { w.current().dropReply() })
				return func() { w.clearCalls(); serves(t, c) }
			},
		},
		{
			// The claim is held in the network; the client gives the
			// connection up (gRPC's keep-alive, about 11s in the user's
			// world; here at once), Lock fails and withdraws on a new
			// connection; heal delivers the claim to etcd, which runs it.
			Name: "claim delivered late after give-up", During: locktest.DuringLock,
			Inject: func(t *testing.T, c *clientv3.Client) func() {
				w := faultyOf(t, c).wire
				held := make(chan *wireConn, 1)
				w.beforeCall(methodTxn, func(any) {
					conn := w.current()
					conn.hold()
					held <- conn
					go conn.giveUpWhenHeld()
				})
				return func() {
					w.clearCalls()
					select {
					case conn := <-held:
						conn.deliver()
					default:
						t.Fatal("a's claim was never sent")
					}
					serves(t, c)
				}
			},
		},
		{
			// a's connection closes while a waits in line: the client dials
			// again, the watch and the renewals resume.
			Name: "connection blip while waiting", During: locktest.DuringWait,
			Inject: func(t *testing.T, c *clientv3.Client) func() {
				conn := faultyOf(t, c).wire.current()
				conn.giveUp()
				return func() { _ = conn.raw.Close(); serves(t, c) }
			},
		},
		{
			// The delete that releases the claim lands; its reply is lost.
			// clientv3 does not send it again: Unlock fails (outcome
			// unknown), and Unlock again says nil (the claim is gone and
			// its lease lives: its own delete removed it; see
			// TestUnlockAgainAfterDeleteReplyLost).
			Name: "Unlock's delete reply lost", During: locktest.DuringUnlock,
			Inject: func(t *testing.T, c *clientv3.Client) func() {
				w := faultyOf(t, c).wire
				w.beforeCall(methodTxn, func(any) { w.current().dropReply() })
				return func() { w.clearCalls(); serves(t, c) }
			},
		},
		{
			// a holds; its connection gets 800ms of latency each way, then
			// is cut off until its lease ends. b must not get the lock
			// before a's Done closed.
			Name: "latency then partition while holding", During: locktest.DuringHold, Ends: true,
			Inject: func(t *testing.T, c *clientv3.Client) func() {
				p := faultyOf(t, c).proxy
				p.SetLatency(800 * time.Millisecond)
				// Let a renewal made under the latency come back.
				time.Sleep(uwTTL/3 + 2*800*time.Millisecond + 200*time.Millisecond)
				p.Blackhole()
				return func() { p.Heal(); p.SetLatency(0); serves(t, c) }
			},
		},
		{
			// etcd's leader is SIGKILLed while a holds (a is connected to
			// another member), and restarted with its data. The lease
			// survives the election: a keeps the lock.
			Name: leaderKilled, During: locktest.DuringHold,
			Inject: func(t *testing.T, c *clientv3.Client) func() {
				e := faultyOf(t, c).cluster
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				leader, err := e.Leader(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := leader.Kill(); err != nil {
					t.Fatal(err)
				}
				return func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					if err := leader.Restart(ctx); err != nil {
						t.Fatal(err)
					}
					if err := e.WaitHealthy(ctx); err != nil {
						t.Fatal(err)
					}
					serves(t, c)
				}
			},
		},
	}
	// A refused TryLock withdraws its claim: on a shared session with a
	// transaction, the one after its claim's; with a lease of its own by
	// revoking the lease.
	withdraw, skip := methodRevoke, 0
	if session {
		withdraw, skip = methodTxn, 1
	}
	faults = append(faults,
		locktest.Fault[*clientv3.Client]{
			// TryLock's claim lands behind b's; the withdraw is held in
			// the network until the client gives the connection up, and
			// is lost with it: TryLock fails. Nothing of a's may stay in
			// line (TestTryLockWithdrawLostOnSession).
			Name: "withdraw held past the give-up", During: locktest.DuringTryLock,
			Inject: func(t *testing.T, c *clientv3.Client) func() {
				return heldAndLost(t, c, withdraw, skip)
			},
		},
		locktest.Fault[*clientv3.Client]{
			// Unlock's delete is held in the network until the client
			// gives the connection up, and is lost with it: Unlock fails,
			// the outcome unknown (TestUnlockGivenUpOnSessionStillReleases).
			Name: "Unlock's delete held past the give-up", During: locktest.DuringUnlock,
			Inject: func(t *testing.T, c *clientv3.Client) func() {
				return heldAndLost(t, c, methodTxn, 0)
			},
		},
	)
	if session {
		return faults
	}
	return append(faults,
		locktest.Fault[*clientv3.Client]{
			// Every byte between a and etcd is held (a partition) from the
			// moment Lock sends its claim; etcd's lease for the hold
			// expires meanwhile (its renewals are held too); then the
			// partition heals and the claim reaches etcd after its lease.
			// Lock must fail (ErrSessionLost) and a Lock again work.
			Name: "lease expired mid-Lock", During: locktest.DuringLock, Ends: true,
			Inject: func(t *testing.T, c *clientv3.Client) func() {
				w := faultyOf(t, c).wire
				clean := client(t, faultyOf(t, c).cluster.Endpoints()...)
				type claim struct {
					conn  *wireConn
					lease clientv3.LeaseID
				}
				held := make(chan claim, 1)
				w.beforeCall(methodTxn, func(req any) {
					conn := w.current()
					conn.hold()
					var lease int64
					if txn, ok := req.(*pb.TxnRequest); ok && len(txn.Success) > 0 {
						lease = txn.Success[0].GetRequestPut().GetLease()
					}
					held <- claim{conn, clientv3.LeaseID(lease)}
					go func() { // in the network until the lease is gone
						ctx, cancel := context.WithTimeout(context.Background(), 4*uwTTL)
						defer cancel()
						for ctx.Err() == nil {
							r, err := clean.TimeToLive(ctx, clientv3.LeaseID(lease))
							if err == nil && r.TTL == -1 { // etcd's answer for an expired lease
								break
							}
							time.Sleep(50 * time.Millisecond)
						}
						conn.release()
					}()
				})
				return func() {
					w.clearCalls()
					select {
					case <-held:
					default:
						t.Fatal("a's claim was never sent")
					}
					serves(t, c)
				}
			},
		},
		locktest.Fault[*clientv3.Client]{
			// Unlock's delete lands and is answered; the Revoke of the
			// hold's lease lands too, its reply is lost, and clientv3
			// sends the Revoke again, which finds no lease. Unlock must
			// say nil.
			Name: "Unlock's Revoke reply lost", During: locktest.DuringUnlock,
			Inject: func(t *testing.T, c *clientv3.Client) func() {
				w := faultyOf(t, c).wire
				w.beforeCall(methodRevoke, func(any) { w.current().dropReply() })
				return func() { w.clearCalls(); serves(t, c) }
			},
		},
	)
}

// heldAndLost arms a's wire to hold the call of method after skip others,
// until the client gives the connection up (gRPC's keep-alive, about 11s
// in the user's world; here at once); heal closes that connection, and
// the held request is lost with it.
func heldAndLost(t *testing.T, c *clientv3.Client, method string, skip int) func() {
	w := faultyOf(t, c).wire
	held := make(chan *wireConn, 1)
	var arm func(left int)
	arm = func(left int) {
		w.beforeCall(method, func(any) {
			if left > 0 {
				arm(left - 1)
				return
			}
			conn := w.current()
			conn.hold()
			held <- conn
			go conn.giveUpWhenHeld()
		})
	}
	arm(skip)
	return func() {
		w.clearCalls()
		select {
		case conn := <-held:
			_ = conn.raw.Close()
		default:
			t.Fatalf("the %s to hold was never sent", method)
		}
		serves(t, c)
	}
}
