package lab06_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/locklab/locklab/labs"
)

// keyState is what Redis holds for the lock: the holders and their
// counts (a string key holds one holder, with no count), and the PTTL.
type keyState struct {
	kind   string           // "none", "string" or "hash"
	counts map[string]int64 // holder -> count; 0 for a string's holder
	pttl   int64            // in ms
}

func (k keyState) String() string {
	switch k.kind {
	case "none":
		return "no key"
	case "string":
		for h := range k.counts {
			return fmt.Sprintf("string %s (no count), %s", h, k.ttl())
		}
	}
	var fields []string
	for _, h := range slices.Sorted(maps.Keys(k.counts)) {
		fields = append(fields, fmt.Sprintf("%s: %d", h, k.counts[h]))
	}
	return fmt.Sprintf("%s {%s}, %s", k.kind, strings.Join(fields, ", "), k.ttl())
}

func (k keyState) ttl() string {
	if k.pttl == -1 {
		return "no TTL (PTTL -1)"
	}
	return fmt.Sprintf("PTTL %d ms", k.pttl)
}

// show reads the lock's key and notes it in the faults lane.
func show(s *labs.Scene) keyState {
	s.T().Helper()
	k := read(s)
	s.Note("%s: %v", s.Key, k)
	return k
}

// read reads the lock's key.
func read(s *labs.Scene) keyState {
	s.T().Helper()
	r := s.Redis()
	kind, err := r.Type(s.Ctx, s.Key).Result()
	s.Must(err)
	k := keyState{kind: kind, counts: map[string]int64{}}
	switch kind {
	case "none":
	case "string":
		v, err := r.Get(s.Ctx, s.Key).Result()
		s.Must(err)
		k.counts[v] = 0
	case "hash":
		m, err := r.HGetAll(s.Ctx, s.Key).Result()
		s.Must(err)
		for h, v := range m {
			var n int64
			_, err := fmt.Sscan(v, &n)
			s.Must(err)
			k.counts[h] = n
		}
	default:
		s.T().Fatalf("lock key %s is a %s", s.Key, kind)
	}
	if kind != "none" {
		k.pttl = s.PTTL() // -1: no expiry
	}
	return k
}

// unchanged reports whether the key still has the same holders and
// counts, and a PTTL that was not renewed.
func unchanged(before, after keyState) bool {
	return before.kind == after.kind && maps.Equal(before.counts, after.counts) && after.pttl <= before.pttl
}
