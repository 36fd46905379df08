package keyslot_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/rig"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// keys covers every kind Base tells apart: tagged, plain, a "{" alone, a
// "}" without a tag, an empty tag, and braces the wrong way round.
var keys = []string{
	"lock:{orders}:7", "{x}", "orders:7", "a{b", "orders}7", "a{}b", "}x{", "a{}b}c", "%}", "x{y}z}w", "",
}

// TestSlotMatchesRedisCluster checks Slot and Base against a real cluster:
// CLUSTER KEYSLOT is the authority.
func TestSlotMatchesRedisCluster(t *testing.T) {
	c := rig.StartCluster(t, 3)
	admin := c.Nodes()[0].Client()
	ctx := t.Context()
	for _, k := range keys {
		want, err := admin.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := keyslot.Slot(k); int64(got) != want {
			t.Errorf("Slot(%q) = %d; CLUSTER KEYSLOT says %d", k, got, want)
		}
		for _, suffix := range []string{":q", ":r:abc", ":fence"} {
			derived := keyslot.Base(k) + suffix
			got, err := admin.ClusterKeySlot(ctx, derived).Result()
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("Base(%q)+%q = %q is in slot %d; want the key's slot %d", k, suffix, derived, got, want)
			}
		}
	}
}

func TestBaseIsUniquePerUntaggedKey(t *testing.T) {
	seen := map[string]string{}
	var all []string
	for _, k := range keys {
		all = append(all, k)
	}
	for i := range 200 {
		all = append(all, fmt.Sprintf("o}%d", i), fmt.Sprintf("o%%7D%d", i), fmt.Sprintf("o}#%d", i))
	}
	for _, k := range all {
		if _, tagged := keyslot.Tag(k); tagged {
			continue
		}
		b := keyslot.Base(k)
		if other, dup := seen[b]; dup {
			t.Errorf("Base(%q) = Base(%q) = %q; want different bases", k, other, b)
		}
		seen[b] = k
		if strings.Count(b, "{") < 1 || !strings.HasSuffix(b, "}") {
			t.Errorf("Base(%q) = %q; want a hash tag", k, b)
		}
	}
}

func TestKnownSlots(t *testing.T) {
	// From the Redis Cluster specification and CLUSTER KEYSLOT.
	for k, want := range map[string]int{"123456789": 12739, "foo": 12182, "{user1000}.following": 3443} {
		if got := keyslot.Slot(k); got != want {
			t.Errorf("Slot(%q) = %d; want %d", k, got, want)
		}
	}
}
