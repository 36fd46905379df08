package registry

// What each lock claims about each fault schedule, as the bench's own
// statement beside the lock's registration (the impl's claims field), so
// the fault scoreboard can set what it measured against what the lock
// claims. The claims are the bench's: they are written from the lock's
// design and checked against every run (faults.md's "claims" section and
// the -strict check), never read from a package's prose.

// Claim verdicts.
const (
	ClaimSurvives = "survives" // the lock Claims to survive it (safety; liveness for the killed holder)
	ClaimNamed    = "named"    // the lock names it as a fault it does not survive
	ClaimUnstated = "unstated" // the registry says nothing
	ClaimMistake  = "mistake"  // a naive lock: its one mistake shows here
)

// Claim is one lock's Claim about one schedule: the verdict and, in words,
// why.
type Claim struct {
	Verdict string
	Why     string
}

// claims maps a schedule id to the lock's claim about it. Missing
// schedules are unstated.
type Claims map[string]Claim

func survives(why string) Claim { return Claim{ClaimSurvives, why} }
func names(why string) Claim    { return Claim{ClaimNamed, why} }
func mistake(why string) Claim  { return Claim{ClaimMistake, why} }

// with returns a copy of c with the given schedules' claims replaced, for
// a variant that differs from its base lock on a few schedules.
func (c Claims) with(changes Claims) Claims {
	out := Claims{}
	for k, v := range c {
		out[k] = v
	}
	for k, v := range changes {
		out[k] = v
	}
	return out
}

// ClaimOf returns what impl claims about schedule.
func ClaimOf(impl, schedule string) Claim {
	if im, ok := Locks[impl]; ok {
		if c, ok := im.Claims[schedule]; ok {
			return c
		}
	}
	return Claim{Verdict: ClaimUnstated}
}
