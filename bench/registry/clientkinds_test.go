package registry

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestPipelinedRunsOnThePipeliners: every lock's run on AutoPipeliners
// sends its commands through the shared AutoPipeliners, none through the
// clients its Connect makes for itself (a Connect that ignored Env.Redis
// would run the plain lock under the @autopipe name), and takes and gives
// back the lock there; every lock on Redis has one, unless its NoPipeliner
// says why not.
func TestPipelinedRunsOnThePipeliners(t *testing.T) {
	var names []string
	for n, im := range Locks {
		if im.System != SysRedis || im.Pipelined {
			continue
		}
		v := im.OnPipeliners()
		if (v == nil) == (im.NoPipeliner == "") {
			t.Errorf("%s: NoPipeliner %q, run on AutoPipeliners %v: want one or the other", n, im.NoPipeliner, v != nil)
			continue
		}
		if v != nil {
			names = append(names, v.Name)
		}
	}
	sort.Strings(names)
	if len(names) < 10 {
		t.Fatalf("locks run on AutoPipeliners: %v; want every lock on Redis but rueidislock", names)
	}
	ctx := t.Context()
	for _, n := range names {
		im := Locks[n]
		if !im.Pipelined || !strings.HasSuffix(n, PipelinedSuffix) || im.ClientKind() != AutoPipe {
			t.Errorf("%s: Pipelined %v, kind %q; want true, %q", n, im.Pipelined, im.ClientKind(), AutoPipe)
		}
		e := Env{Addrs: addrs, TTL: 10 * time.Second}
		if _, err := im.Connect(e); err == nil {
			t.Errorf("%s: Connect without AutoPipeliners = nil error; want one saying it needs them", n)
		}
		p, err := e.OpenPipeliners(im.Nodes)
		if err != nil {
			t.Fatal(err)
		}
		con, err := im.Connect(p.Env)
		if err != nil {
			t.Fatalf("%s: Connect: %v", n, err)
		}
		key := KeyRoot + "test:pipelined:" + n
		l := con.Locker(key)
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := l.Lock(lctx); err != nil {
			t.Errorf("%s: Lock = %v", n, err)
		} else if err := l.Unlock(lctx); err != nil {
			t.Errorf("%s: Unlock = %v", n, err)
		}
		cancel()
		if got := p.Sent.Load(); got < 2 {
			t.Errorf("%s: %d commands through the AutoPipeliners for a Lock and an Unlock; want 2 or more", n, got)
		}
		if con.Sent != nil && con.Sent.Load() != 0 {
			t.Errorf("%s: %d commands through the contender's own clients; want 0 (all through the AutoPipeliners)", n, con.Sent.Load())
		}
		if err := con.Close(); err != nil {
			t.Errorf("%s: Close: %v", n, err)
		}
		if err := p.Close(); err != nil {
			t.Errorf("%s: closing the AutoPipeliners: %v", n, err)
		}
	}
}

func TestParseClientKinds(t *testing.T) {
	for _, ok := range [][]string{{Plain}, {AutoPipe}, {Plain, AutoPipe}, {AutoPipe, Plain}} {
		if err := ParseClientKinds(ok); err != nil {
			t.Errorf("ParseClientKinds(%q) = %v; want nil", ok, err)
		}
	}
	for _, bad := range [][]string{nil, {"pipelined"}, {Plain, Plain}, {""}} {
		if err := ParseClientKinds(bad); err == nil {
			t.Errorf("ParseClientKinds(%q) = nil; want an error", bad)
		}
	}
}
