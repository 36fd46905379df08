package lab13_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/etcdlock"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/internal/sysclient"
	"github.com/locklab/locklab/labs"
	lab13 "github.com/locklab/locklab/labs/13-consensus"
)

// The contract of a writer, besides the lesson (labs.ExerciseWriterContract):
// WriteOrder's writes land while the worker holds the lock, with the
// status it is given; after the lease is revoked they are refused with an
// error wrapping ErrRefused and change nothing; with a cancelled context
// they are not made; and what a worker wrote stays after its lease ends.

// etcdWriter is the contract of write on one etcd member, started with
// the first hold.
func etcdWriter(write func(context.Context, clientv3.KV, *etcdlock.Mutex, string) error) labs.WriterContract {
	var (
		once sync.Once
		c    *clientv3.Client
	)
	return labs.WriterContract{
		Store:   "etcd",
		Name:    "WriteOrder",
		Refused: lab13.ErrRefused,
		Hold: func(t testing.TB) labs.Hold {
			once.Do(func() {
				e := rig.StartEtcd(labs.QuietT(t), 1)
				var err error
				if c, err = sysclient.Etcd(e.Endpoints()...); err != nil {
					t.Fatalf("etcd client: %v", err)
				}
				t.Cleanup(func() { _ = c.Close() })
			})
			m := etcdlock.New(c, "lock:order:1001", etcdlock.WithTTL(lease))
			if err := m.Lock(t.Context()); err != nil {
				t.Fatalf("etcd lock: %v", err)
			}
			resp, err := c.Get(t.Context(), m.Claim())
			if err != nil || len(resp.Kvs) == 0 {
				t.Fatalf("the lock's claim %s: %v", m.Claim(), err)
			}
			return &etcdHold{c: c, m: m, lease: clientv3.LeaseID(resp.Kvs[0].Lease), write: write}
		},
	}
}

type etcdHold struct {
	c     *clientv3.Client
	m     *etcdlock.Mutex
	lease clientv3.LeaseID
	write func(context.Context, clientv3.KV, *etcdlock.Mutex, string) error
}

func (h *etcdHold) Write(ctx context.Context, data string) error {
	return h.write(ctx, h.c, h.m, data)
}

func (h *etcdHold) Read(ctx context.Context) (string, error) {
	resp, err := h.c.Get(ctx, lab13.OrderKey)
	if err != nil || len(resp.Kvs) == 0 {
		return "(none)", err
	}
	return string(resp.Kvs[0].Value), nil
}

func (h *etcdHold) Want(data string) string { return data }

func (h *etcdHold) Lose(ctx context.Context) error {
	if _, err := h.c.Revoke(ctx, h.lease); err != nil && !errors.Is(err, errLeaseGone) && !isLeaseNotFound(err) {
		return fmt.Errorf("revoking the worker's lease: %w", err)
	}
	return nil
}

func (h *etcdHold) Release(ctx context.Context) error {
	if err := h.m.Unlock(ctx); err != nil && !errors.Is(err, etcdlock.ErrNotHeld) {
		return err
	}
	return nil
}

// errLeaseGone stands for etcd's "requested lease not found": a lease
// already revoked.
var errLeaseGone = errors.New("lease not found")

func isLeaseNotFound(err error) bool {
	return err != nil && (errors.Is(err, errLeaseGone) || strings.Contains(strings.ToLower(err.Error()), "lease not found"))
}

func TestLab13_ExerciseContract(t *testing.T) {
	t.Parallel()
	labs.ExerciseWriterContract(t, titlePause, etcdWriter(lab13.WriteOrder))
}

func TestLab13_FixedContract(t *testing.T) {
	t.Parallel()
	labs.FixedWriterContract(t, titlePause, etcdWriter(guarded))
}
