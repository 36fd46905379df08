package labs_test

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/labs"
)

// TestExploreSearchesEveryOrdering: three actors of one step each have
// 3! = 6 orderings; the search runs each once (after one warm-up run),
// and no two alike.
func TestExploreSearchesEveryOrdering(t *testing.T) {
	seen := map[string]int{}
	race := labs.Race{
		Actors: func(s *labs.Scene, impl *labs.Impl) []*labs.Actor {
			var actors []*labs.Actor
			for _, name := range []string{"A", "B", "C"} {
				actors = append(actors, s.Actor(s.Client(name, impl), "note "+name))
			}
			return actors
		},
		Final: func(s *labs.Scene, _ []*labs.Actor) {
			var order []string
			for _, e := range s.Events() {
				if e.Kind == history.Note && e.Client != "" {
					order = append(order, e.Client)
				}
			}
			seen[strings.Join(order, "")]++
		},
	}
	labs.ExploreFixed(t, "explorer", race, labs.Correct, labs.ExploreOpts{Exhaustive: true, Budget: 6})
	if len(seen) != 6 {
		t.Fatalf("orderings run: %v; want all 6", seen)
	}
	for order, n := range seen {
		want := 1
		if order == "ABC" {
			want = 2 // the warm-up run, then the search's first
		}
		if n != want {
			t.Errorf("ordering %s ran %d times; want %d", order, n, want)
		}
	}
}

// TestExploreFindsTheOverlap: two clients that enter and exit in two
// steps overlap in some ordering, and a sampled exploration finds one.
func TestExploreFindsTheOverlap(t *testing.T) {
	race := labs.Race{
		Actors: func(s *labs.Scene, impl *labs.Impl) []*labs.Actor {
			return []*labs.Actor{
				s.Actor(s.Client("A", impl), "enter", "exit"),
				s.Actor(s.Client("B", impl), "enter", "exit"),
			}
		},
	}
	labs.ExploreBroken(t, "explorer", race, labs.Correct, labs.ExploreOpts{Budget: 2})
}
