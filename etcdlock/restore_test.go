package etcdlock_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/locklab/locklab/etcdlock"
	"github.com/locklab/locklab/internal/rig"
)

// TestTokenAfterRestoreGoesBack states what holds for tokens across a
// restore from backup (package doc, Tokens): a member's data directory is
// copied while it is stopped (a backup), locks are taken after it, then
// the member is restored from the copy. etcd's revision goes back to the
// backup's, and so do the tokens: the first holder after the restore gets
// a token smaller than holders before it had. etcd 3.4, which the rig
// runs, offers no way to raise the revision on restore (etcdutl
// snapshot restore --bump-revision is etcd 3.5.10 and later), so this test
// pins the limit the doc states rather than a fix.
func TestTokenAfterRestoreGoesBack(t *testing.T) {
	t.Parallel() // it stops and restores its member: a cluster of its own
	ctx := context.Background()
	e := rig.StartEtcd(t, 1)
	m := e.Members()[0]
	c := client(t, e.Endpoints()...)
	key := lockKey(t)
	lockOnce := func() uint64 {
		t.Helper()
		l := etcdlock.New(c, key)
		if err := l.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		f := l.Fence()
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		return f
	}

	before := lockOnce()
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	backup := t.TempDir()
	copyDir(t, m.DataDir(), backup)
	if err := m.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	var last uint64
	for range 10 {
		last = lockOnce()
	}
	if last <= before {
		t.Fatalf("tokens after the backup: %d, then %d; want growing", before, last)
	}

	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(m.DataDir()); err != nil {
		t.Fatal(err)
	}
	copyDir(t, backup, m.DataDir())
	if err := m.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	after := lockOnce()
	t.Logf("tokens: %d at the backup, %d before the restore, %d after it", before, last, after)
	if after >= last {
		t.Errorf("token after the restore = %d, last before it %d: tokens did not go back; update the package doc (Tokens)", after, last)
	}
}

// copyDir copies the directory tree src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
