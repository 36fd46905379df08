package registry

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
)

var addrs []string

func TestMain(m *testing.M) {
	rig.Main(m, 5, func(nodes []*rig.Node) {
		for _, n := range nodes {
			addrs = append(addrs, n.Addr())
		}
	})
}

// TestRawReceiptReleaseLostReply checks the single-server floors' releases
// against a real lost reply: the fault proxy drops the EVALSHA's reply,
// and go-redis, on its default options, sends it again. raw+receipt
// answers 1 all the same; raw answers 0, which is what the receipt is for
// (if raw answered 1, the test could not tell the two apart). Neither
// answers 1 for a token that never held the lock.
func TestRawReceiptReleaseLostReply(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		script *redis.Script
		name   string
		want   int
	}{
		{rawReleaseReceipt, "raw+receipt", 1},
		{rawRelease, "raw", 0},
	} {
		p, c := locktest.ThroughProxy(t, addrs[0])
		key := KeyRoot + "test:raw:" + tc.name
		l := &rawLocker{cs: []redis.UniversalClient{c}, key: key, base: keyslot.Base(key), ttl: time.Minute, script: tc.script}
		if err := tc.script.Load(ctx, c).Err(); err != nil { // so the resend is an EVALSHA too
			t.Fatal(err)
		}
		if err := l.Lock(ctx); err != nil {
			t.Fatalf("%s: Lock: %v", tc.name, err)
		}
		lost := p.DropReply(faultproxy.Match{Command: "EVALSHA", Key: key}, 1)
		if n := l.release(ctx, l.tok); n != tc.want {
			t.Errorf("%s: release whose reply was lost, sent again = %d; want %d", tc.name, n, tc.want)
		}
		if lost.Hits() != 1 {
			t.Errorf("%s: the release's reply was not lost (%d hits)", tc.name, lost.Hits())
		}
		if n := l.release(ctx, "never-held"); n != 0 {
			t.Errorf("%s: release of a token that never held the lock = %d; want 0", tc.name, n)
		}
		if err := c.Del(ctx, key, keyslot.Receipt(l.base, l.tok)).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
