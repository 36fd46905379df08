package main

// What each lock's documentation says about each fault schedule, read from
// its doc.go (ours) or its README (peers), so the scoreboard can set what
// it measured against what the lock promises. A lock file for another
// system (etcd, ZooKeeper, PostgreSQL) adds its own with addClaims from
// its init.

// Claim verdicts.
const (
	claimSurvives = "survives" // the doc promises it (safety; liveness for the killed holder)
	claimNamed    = "named"    // the doc names it as a fault the lock does not survive
	claimUnstated = "unstated" // the doc does not say
	claimMistake  = "mistake"  // a naive lock: its one mistake shows here
)

type claim struct {
	verdict string
	source  string // where the doc says it
}

// claims maps impl → schedule id → claim. Missing entries are unstated.
var claims = map[string]map[string]claim{}

// addClaims records impl's claims; variants of one lock share a table.
func addClaims(table map[string]claim, impls ...string) {
	for _, im := range impls {
		claims[im] = table
	}
}

func claimOf(impl, schedule string) claim {
	if c, ok := claims[impl][schedule]; ok {
		return c
	}
	return claim{verdict: claimUnstated}
}

func init() {
	correct := map[string]claim{
		"pause":      {claimNamed, `correct/doc.go: "a holder that runs past the TTL (a GC or SIGSTOP pause"`},
		"lost-reply": {claimSurvives, `correct/doc.go: "every command here gives the same answer the second time"`},
		"late":       {claimSurvives, `correct/doc.go: "only its holder can delete or extend the key"; "every command here gives the same answer the second time"`},
		"failover":   {claimNamed, `correct/doc.go: "failover or a restart without persistence, which can forget the key"`},
		"restart":    {claimNamed, `correct/doc.go: "failover or a restart without persistence, which can forget the key"`},
		"eviction":   {claimSurvives, `correct/doc.go: "Lock refuses such a server unless told otherwise"`},
		"clock":      {claimNamed, `correct/doc.go: "a server clock stepped forward ends the lock early"`},
		"kill":       {claimSurvives, `correct/queue.go: "A dead holder: nobody releases. The key expires after its TTL"`},
	}
	addClaims(correct, "correct", "correct-poll")
	keep := map[string]claim{}
	for k, v := range correct {
		keep[k] = v
	}
	keep["pause"] = claim{claimNamed, `watchdog/doc.go: "if this whole process stops (SIGSTOP, a long GC pause, a VM migration) for longer than the ttl"`}
	addClaims(keep, "correct+keep")
	addClaims(map[string]claim{
		"pause":      {claimNamed, `redlock/doc.go: "A process pause after Lock returned ... can let the holder act after its lock has expired"`},
		"lost-reply": {claimSurvives, `redlock/doc.go: "delete the token from every node, including those that did not answer OK (a reply may have been lost after the SET was done)"`},
		"late":       {claimSurvives, `redlock/doc.go: "A late release ... the owner check fails on every node"`},
		"failover":   {claimSurvives, `redlock/doc.go: "survives the crash or partition of a minority of them"`},
		"restart":    {claimNamed, `redlock/doc.go: "A node that restarts at once without its data lets a second client win a majority that includes it"`},
		"latency":    {claimNamed, `redlock/doc.go: "or a write that sits in the network"`},
		"clock":      {claimNamed, `redlock/doc.go: "a node whose clock is stepped forward drops our key early"`},
		"kill":       {claimSurvives, `redlock/doc.go: "A dead holder ... Bound: ttl plus ttl/4 plus a round"`},
	}, "redlock-5", "redlock-5-poll")
	addClaims(map[string]claim{
		"pause":      {claimNamed, `watchdog/doc.go: "if this whole process stops (SIGSTOP, a long GC pause, a VM migration) for longer than the ttl"`},
		"lost-reply": {claimSurvives, `watchdog/doc.go: "Neither script can touch another holder's key"`},
		"late":       {claimSurvives, `watchdog/doc.go: "Neither script can touch another holder's key"`},
		"kill":       {claimSurvives, `README: "a short lease that dies with the process"`},
	}, "watchdog")
	addClaims(map[string]claim{
		"lost-reply": {claimSurvives, `reentrant/doc.go: "No other owner can take, release or extend it meanwhile"`},
		"late":       {claimSurvives, `reentrant/doc.go: "No other owner can take, release or extend it meanwhile"`},
		"kill":       {claimSurvives, `reentrant/doc.go: "A hold lasts at most the TTL after the last Lock, Unlock or Extend of its owner"`},
	}, "reentrant")
	addClaims(map[string]claim{
		"pause":      {claimSurvives, `fencing/doc.go: "a holder paused past its lease cannot overwrite what a newer holder wrote"`},
		"lost-reply": {claimSurvives, `fencing/doc.go: "When a reply is lost ... TryLock then releases the lock it may have taken"`},
		"late":       {claimSurvives, `fencing/doc.go: "however late its write arrives, a write with token t is applied only if no write with a token of t or more was applied"`},
		"failover":   {claimNamed, `fencing/doc.go: "The limit: where tokens come from ... the promoted replica's counter is behind"`},
		"restart":    {claimNamed, `fencing/doc.go: "A restart without persistence resets the counter the same way"`},
		"latency":    {claimSurvives, `fencing/doc.go: "a write packet stuck in the network"; "The store's guarantee needs no timing at all"`},
		"clock":      {claimSurvives, `fencing/doc.go: "The store's guarantee needs no timing at all"`},
		"kill":       {claimSurvives, `fencing/doc.go: the lease runs out (Timing)`},
	}, "fencing")

	// The naive locks: where each one's mistake should show (the
	// scoreboard is blind if it does not). Every naive lock is also unsafe
	// wherever a correct single-server lock is.
	addClaims(map[string]claim{
		"lost-reply": {claimMistake, "SETNX's reply lost, go-redis re-sends it: refused, so no EXPIRE ever follows and the key never expires"},
	}, "naive-setnx-expire")
	addClaims(map[string]claim{
		"kill": {claimMistake, "B and C both see the dead holder's key gone (GET) and both SET it"},
	}, "naive-getset")
	addClaims(map[string]claim{
		"pause":   {claimMistake, "A resumes and DELs B's lock: C gets in while B is inside"},
		"latency": {claimMistake, "A's DEL lands late and deletes B's lock"},
		"late":    {claimMistake, "a DEL delivered late deletes the next holder's lock"},
	}, "naive-blinddel")
	addClaims(map[string]claim{
		"late": {claimMistake, "the DEL after the owner check is delivered late, when the key is the next holder's"},
	}, "naive-getdel")
	addClaims(map[string]claim{
		"pause": {claimMistake, "A resumes; its blind EXPIRE renews B's lock and A is never told"},
	}, "naive-renewal")
}
