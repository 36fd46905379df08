package main

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/speed"
)

// planOf returns the steps main runs for args (as run does: -impls
// resolved, the lone control dropped, the -client kinds applied).
func planOf(t *testing.T, args ...string) []speed.Step {
	t.Helper()
	c, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	impls, err := registry.Resolve(c.Impls)
	if err != nil {
		t.Fatal(err)
	}
	impls = speed.WithClientKinds(speed.DropLoneControl(impls, c), c.Client)
	return speed.Steps(c.Rounds, speed.Cells(c), impls)
}

// byCell returns, per cell label and round, the impls that ran there, in
// their order.
func byCell(ss []speed.Step) map[string]map[int][]string {
	out := map[string]map[int][]string{}
	for _, s := range ss {
		k := s.Cell.String()
		if out[k] == nil {
			out[k] = map[int][]string{}
		}
		out[k][s.Round] = append(out[k][s.Round], s.Impl.Name)
	}
	return out
}

// TestClientFlagRejectsBadValues: -client takes plain and autopipe, each
// once; anything else is an error that names the flag.
func TestClientFlagRejectsBadValues(t *testing.T) {
	for _, bad := range []string{"pipelined", "plain,plain", "plain,", "", "PLAIN", "plain,autopipe,rueidis"} {
		_, err := parseFlags([]string{"-client", bad}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "-client") {
			t.Errorf("-client %q: error %v; want one naming -client", bad, err)
		}
	}
	for _, good := range []string{"plain", "autopipe", "autopipe,plain"} {
		if _, err := parseFlags([]string{"-client", good}, io.Discard); err != nil {
			t.Errorf("-client %q: %v", good, err)
		}
	}
}

// TestClientPlanDefault: without -client, the locks marked
// PipelinedInDefault run on AutoPipeliners too, in the contended and keys
// headline cells only, in the same round as the rest; every lock still
// runs on its own clients in every cell.
func TestClientPlanDefault(t *testing.T) {
	var want []string
	for _, n := range registry.Default() {
		if im := registry.Locks[n]; im.PipelinedInDefault {
			want = append(want, im.OnPipeliners().Name)
		}
	}
	if len(want) < 4 {
		t.Fatalf("PipelinedInDefault locks: %v; want correct, the peers that take an AutoPipeliner and the floors", want)
	}
	cs := byCell(planOf(t))
	for label, rounds := range cs {
		pipelinedHere := strings.HasPrefix(label, "contended c=32 hold=1ms") || strings.HasPrefix(label, "keys c=64 hold=0")
		for r, names := range rounds {
			var got []string
			for _, n := range names {
				if strings.HasSuffix(n, registry.PipelinedSuffix) {
					got = append(got, n)
				}
			}
			slices.Sort(got)
			w := want
			if !pipelinedHere {
				w = nil
			}
			if !slices.Equal(got, slices.Sorted(slices.Values(w))) {
				t.Errorf("default plan, %s, round %d: on AutoPipeliners %v; want %v", label, r, got, w)
			}
			if !slices.Contains(names, "correct") || !slices.Contains(names, "raw") {
				t.Errorf("default plan, %s, round %d: %v lacks correct or raw on their own clients", label, r, names)
			}
		}
	}
	if len(cs) != 3 {
		t.Errorf("default plan cells %v; want the three headline cells", cs)
	}
	for _, args := range [][]string{{"-scenarios", "contended,keys", "-impls", "correct"}, {"-quick"}, {"-clients", "32"}} {
		for _, s := range planOf(t, args...) {
			if s.Impl.Pipelined {
				t.Errorf("%q without -client: runs %s in %s; want the runs on AutoPipeliners only when -client asks", args, s.Impl.Name, s.Cell)
				break
			}
		}
	}
	full := byCell(planOf(t, "-full"))
	if names := full["keys c=64 hold=0 keys=1024"][0]; !slices.Contains(names, "correct@autopipe") {
		t.Errorf("-full, keys headline cell: %v; want correct@autopipe there too", names)
	}
}

// TestClientPlanBoth: -client plain,autopipe runs every lock that has a
// run on AutoPipeliners on both kinds in every cell and round, the order
// rotated each round; a lock without one (rueidislock) runs on its own
// clients only. -client autopipe runs the runs on AutoPipeliners alone.
func TestClientPlanBoth(t *testing.T) {
	args := []string{"-scenarios", "keys,contended", "-impls", "correct*,raw*,redislock*,redsync*,rueidislock*"}
	cs := byCell(planOf(t, append(args, "-client", "plain,autopipe")...))
	if len(cs) == 0 {
		t.Fatal("no cells")
	}
	for label, rounds := range cs {
		for r, names := range rounds {
			for _, n := range names {
				if strings.HasSuffix(n, registry.PipelinedSuffix) {
					continue
				}
				v := registry.Locks[n].OnPipeliners()
				switch {
				case n == "rueidislock" && v != nil:
					t.Errorf("%s round %d: rueidislock runs on AutoPipeliners", label, r)
				case n != "rueidislock" && (v == nil || !slices.Contains(names, v.Name)):
					t.Errorf("%s round %d: %s without its run on AutoPipeliners: %v", label, r, n, names)
				}
			}
			if !slices.Contains(names, "rueidislock") || !slices.Contains(names, "correct@autopipe") || !slices.Contains(names, "raw+receipt@autopipe") {
				t.Errorf("%s round %d: %v; want rueidislock, correct@autopipe, raw+receipt@autopipe", label, r, names)
			}
			if next, ok := rounds[r+1]; ok && next[0] == names[0] {
				t.Errorf("%s: rounds %d and %d both start with %s: the order does not rotate", label, r, r+1, names[0])
			}
		}
	}
	for label, rounds := range byCell(planOf(t, append(args, "-client", "autopipe")...)) {
		for r, names := range rounds {
			for _, n := range names {
				if !strings.HasSuffix(n, registry.PipelinedSuffix) {
					t.Errorf("-client autopipe: %s round %d runs %s on its own clients", label, r, n)
				}
			}
		}
	}
}
