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
	// Each doc.go has a "Faults" section in the scoreboard's words; the
	// quotes below are taken from it (TestClaimsQuoteTheDocs keeps them
	// honest).
	correct := map[string]claim{
		"pause":      {claimNamed, `correct/doc.go: "It does not survive, by design: a holder paused past its TTL"`},
		"lost-reply": {claimSurvives, `correct/doc.go: "It survives a lost reply sent again"`},
		"late":       {claimSurvives, `correct/doc.go: "a command delivered late"`},
		"failover":   {claimNamed, `correct/doc.go: "a failover before the key replicates or a restart without data (either forgets the key"`},
		"restart":    {claimNamed, `correct/doc.go: "a failover before the key replicates or a restart without data (either forgets the key"`},
		"latency":    {claimNamed, `correct/doc.go: "or a write delayed in the network past the TTL"`},
		"eviction":   {claimSurvives, `correct/doc.go: "and eviction (Lock refuses a server that evicts)"`},
		"clock":      {claimNamed, `correct/doc.go: "and a clock jump on the server (it ends the lock early)"`},
		"kill":       {claimSurvives, `correct/doc.go: "a killed holder (its key expires after the TTL)"`},
	}
	addClaims(correct, "correct", "correct-poll")
	keep := map[string]claim{}
	for k, v := range correct {
		keep[k] = v
	}
	keep["pause"] = claim{claimNamed, `watchdog/doc.go: "It does not survive: a holder paused past its TTL"`}
	addClaims(keep, "correct+keep")
	addClaims(map[string]claim{
		"pause":      {claimNamed, `redlock/doc.go: "It does not survive a holder paused past its validity"`},
		"lost-reply": {claimSurvives, `redlock/doc.go: "It survives a lost reply sent again"`},
		"late":       {claimSurvives, `redlock/doc.go: "a command delivered late"`},
		"failover":   {claimSurvives, `redlock/doc.go: "the failover or loss of a minority of nodes"`},
		"restart":    {claimNamed, `redlock/doc.go: "nodes restarted without data, or clock jumps, on enough nodes to make a majority without the holder"`},
		"latency":    {claimNamed, `redlock/doc.go: "a write delayed in the network past it"`},
		"eviction":   {claimSurvives, `redlock/doc.go: "and eviction (Lock refuses nodes that evict)"`},
		"clock":      {claimSurvives, `redlock/doc.go: "a clock jump on one node"`},
		"kill":       {claimSurvives, `redlock/doc.go: "a killed holder (its keys expire after the TTL)"`},
	}, "redlock-5", "redlock-5-poll")
	addClaims(map[string]claim{
		"pause":      {claimNamed, `watchdog/doc.go: "It does not survive: a holder paused past its TTL"`},
		"lost-reply": {claimSurvives, `watchdog/doc.go: "It survives a lost reply sent again"`},
		"late":       {claimSurvives, `watchdog/doc.go: "and a command delivered late"`},
		"failover":   {claimNamed, `watchdog/doc.go: "a failover before the key replicates or a restart without data (either forgets the key)"`},
		"restart":    {claimNamed, `watchdog/doc.go: "a failover before the key replicates or a restart without data (either forgets the key)"`},
		"latency":    {claimNamed, `watchdog/doc.go: "a write delayed in the network past the TTL (the holder is told when its deadline passes, but a write already sent still lands)"`},
		"eviction":   {claimSurvives, `watchdog/doc.go: "and eviction (Lock refuses a server that evicts)"`},
		"clock":      {claimNamed, `watchdog/doc.go: "and a clock jump on the server"`},
		"kill":       {claimSurvives, `watchdog/doc.go: "a killed holder (its short lease dies with the process)"`},
	}, "watchdog")
	addClaims(map[string]claim{
		"pause":      {claimNamed, `reentrant/doc.go: "It does not survive, as no lease lock does: a holder paused past its TTL"`},
		"lost-reply": {claimSurvives, `reentrant/doc.go: "It survives a lost reply sent again"`},
		"late":       {claimSurvives, `reentrant/doc.go: "a command delivered late (a Lock that gave up cancels its call by id)"`},
		"failover":   {claimNamed, `reentrant/doc.go: "a failover before the key replicates, a restart without data"`},
		"restart":    {claimNamed, `reentrant/doc.go: "a failover before the key replicates, a restart without data"`},
		"latency":    {claimNamed, `reentrant/doc.go: "a write delayed in the network past the TTL"`},
		"eviction":   {claimSurvives, `reentrant/doc.go: "and eviction (Lock refuses a server that evicts)"`},
		"clock":      {claimNamed, `reentrant/doc.go: "and a clock jump on the server"`},
		"kill":       {claimSurvives, `reentrant/doc.go: "a killed holder (a hold lasts at most the TTL after its owner's last call)"`},
	}, "reentrant")
	addClaims(map[string]claim{
		"pause":      {claimSurvives, `fencing/doc.go: "it survives a holder paused past its TTL"`},
		"lost-reply": {claimSurvives, `fencing/doc.go: "a lost reply sent again (the acquire run twice returns the same token)"`},
		"late":       {claimSurvives, `fencing/doc.go: "a command delivered late"`},
		"failover":   {claimNamed, `fencing/doc.go: "It does not survive a failover before the counter replicates or a restart without data, when more than one token is lost"`},
		"restart":    {claimNamed, `fencing/doc.go: "It does not survive a failover before the counter replicates or a restart without data, when more than one token is lost"`},
		"latency":    {claimSurvives, `fencing/doc.go: "a write delayed in the network past the TTL and a clock jump on the server (the store refuses the late write, whatever the timing)"`},
		"eviction":   {claimSurvives, `fencing/doc.go: "and eviction (Lock refuses a server that evicts"`},
		"clock":      {claimSurvives, `fencing/doc.go: "a write delayed in the network past the TTL and a clock jump on the server (the store refuses the late write, whatever the timing)"`},
		"kill":       {claimSurvives, `fencing/doc.go: "a killed holder"`},
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
