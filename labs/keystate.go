package labs

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// KeyState is what Redis holds for a lock's key: the holders and their
// counts (a string key holds one holder, with no count; a counted lock's
// hash holds a count per owner), and the PTTL.
type KeyState struct {
	// Kind is "none", "string" or "hash".
	Kind string
	// Counts maps each holder to its count; a string's holder to 0.
	Counts map[string]int64
	// Other holds a hash's fields whose values are not counts.
	Other map[string]string
	// PTTL is in milliseconds, as Redis reports it: -1 for no expiry.
	PTTL int64
}

func (k KeyState) String() string {
	switch k.Kind {
	case "none":
		return "no key"
	case "string":
		for h := range k.Counts {
			return fmt.Sprintf("string %s (no count), %s", h, k.ttl())
		}
	}
	var fields []string
	for _, h := range slices.Sorted(maps.Keys(k.Counts)) {
		fields = append(fields, fmt.Sprintf("%s: %d", h, k.Counts[h]))
	}
	for _, f := range slices.Sorted(maps.Keys(k.Other)) {
		fields = append(fields, fmt.Sprintf("%s: %q", f, k.Other[f]))
	}
	return fmt.Sprintf("%s {%s}, %s", k.Kind, strings.Join(fields, ", "), k.ttl())
}

func (k KeyState) ttl() string {
	if k.PTTL == -1 {
		return "no TTL (PTTL -1)"
	}
	return fmt.Sprintf("PTTL %d ms", k.PTTL)
}

// Unchanged reports whether after has the same holders and counts as k,
// and a PTTL that was not renewed.
func (k KeyState) Unchanged(after KeyState) bool {
	return k.Kind == after.Kind && maps.Equal(k.Counts, after.Counts) && maps.Equal(k.Other, after.Other) &&
		after.PTTL <= k.PTTL
}

// ShowKey reads the lock's key on the first node ([Scene.ReadKey]) and
// notes it in the faults lane.
func (s *Scene) ShowKey() KeyState {
	s.t.Helper()
	k := s.ReadKey()
	s.Note("%s: %v", s.Key, k)
	return k
}

// ReadKey reads the lock's key on the first node. A key of another type
// (a list, say) fails the test.
func (s *Scene) ReadKey() KeyState {
	s.t.Helper()
	r := s.Redis()
	kind, err := r.Type(s.Ctx, s.Key).Result()
	s.Must(err)
	k := KeyState{Kind: kind, Counts: map[string]int64{}}
	switch kind {
	case "none":
	case "string":
		v, err := r.Get(s.Ctx, s.Key).Result()
		s.Must(err)
		k.Counts[v] = 0
	case "hash":
		m, err := r.HGetAll(s.Ctx, s.Key).Result()
		s.Must(err)
		for h, v := range m {
			var n int64
			if _, err := fmt.Sscan(v, &n); err != nil || fmt.Sprint(n) != v {
				if k.Other == nil {
					k.Other = map[string]string{}
				}
				k.Other[h] = v
				continue
			}
			k.Counts[h] = n
		}
	default:
		s.Fatalf("labs: lock key %s is a %s, neither a string nor a hash", s.Key, kind)
	}
	if kind != "none" {
		k.PTTL = s.PTTL()
	}
	return k
}
