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
	// FalseFailures: the lock's code, under this schedule, returns an
	// error from Unlock although the release took effect (its release
	// run twice answers "not held" the second time): a defect for the
	// caller, not a safety violation. False: the claim is that every
	// Unlock that took effect says so. faults.md sets it against the runs'
	// releases reported failed that took effect.
	FalseFailures bool
}

// claims maps a schedule id to the lock's claim about it. Missing
// schedules are unstated.
type Claims map[string]Claim

func survives(why string) Claim { return Claim{Verdict: ClaimSurvives, Why: why} }
func names(why string) Claim    { return Claim{Verdict: ClaimNamed, Why: why} }
func mistake(why string) Claim  { return Claim{Verdict: ClaimMistake, Why: why} }

// reportsFailed returns c with FalseFailures set.
func (c Claim) reportsFailed() Claim { c.FalseFailures = true; return c }

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

// ChapterClaim is one row of report.md's table of the chapter's throughput
// claims: a claim, the lock measured for it, and the rate that would make
// it true.
type ChapterClaim struct {
	System, Claim, Impl string
	Want                float64 // acquisitions/s the claim amounts to; 0: no figure claimed
}

// ChapterClaims are the throughput claims of "分布式锁完全指南：从 SETNX 到
// Redisson" (section 35.5.2), in the table's order, each with the
// registered lock that stands for it.
var ChapterClaims = []ChapterClaim{
	{"Redis", "high: 100k+ QPS", "correct", 100_000},
	{"Redis (redsync, the peer)", "high: 100k+ QPS", "redsync-1", 100_000},
	{"ZooKeeper", "moderate: tens of thousands of QPS", "zklock", 10_000},
	{"etcd", "the middle ground (no figure)", "etcdlock", 0},
	{"etcd (concurrency.Mutex, the chapter's example)", "the middle ground (no figure)", "etcd-mutex", 0},
	{"PostgreSQL row lock", "the most critical work (no figure)", "pglock-row", 0},
	{"PostgreSQL advisory lock", "(not in the chapter)", "pglock", 0},
}
