package main

// What each lock claims about each fault schedule, as the bench's own
// statement beside the lock's registration (the impl's claims field), so
// the fault scoreboard can set what it measured against what the lock
// claims. The claims are the bench's: they are written from the lock's
// design and checked against every run (faults.md's "claims" section and
// the -strict check), never read from a package's prose.

// Claim verdicts.
const (
	claimSurvives = "survives" // the lock claims to survive it (safety; liveness for the killed holder)
	claimNamed    = "named"    // the lock names it as a fault it does not survive
	claimUnstated = "unstated" // the registry says nothing
	claimMistake  = "mistake"  // a naive lock: its one mistake shows here
)

// claim is one lock's claim about one schedule: the verdict and, in words,
// why.
type claim struct {
	verdict string
	why     string
}

// claims maps a schedule id to the lock's claim about it. Missing
// schedules are unstated.
type claims map[string]claim

func survives(why string) claim { return claim{claimSurvives, why} }
func names(why string) claim    { return claim{claimNamed, why} }
func mistake(why string) claim  { return claim{claimMistake, why} }

// with returns a copy of c with the given schedules' claims replaced, for
// a variant that differs from its base lock on a few schedules.
func (c claims) with(changes claims) claims {
	out := claims{}
	for k, v := range c {
		out[k] = v
	}
	for k, v := range changes {
		out[k] = v
	}
	return out
}

// claimOf returns what impl claims about schedule.
func claimOf(impl, schedule string) claim {
	if im, ok := registry[impl]; ok {
		if c, ok := im.claims[schedule]; ok {
			return c
		}
	}
	return claim{verdict: claimUnstated}
}
