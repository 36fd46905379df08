package main

// What the doc.go of the locks on etcd, ZooKeeper and PostgreSQL says about
// each schedule that applies to them (faults_systems.go), quoted so that
// TestClaimsQuoteTheDocs keeps the quotes honest. Their protected resource
// is written through the fenced store with their tokens (Fence), so a
// lease lost while the holder is away (pause, latency) is a promise the
// token keeps, not the lock. The impl files add these with addClaims.

var etcdlockClaims = map[string]claim{
	"pause":      {claimSurvives, `etcdlock/doc.go: "which is why Done is a hint to stop work, and the fencing token is the guarantee"`},
	"lost-reply": {claimSurvives, `etcdlock/doc.go: "again (a retry after a lost reply) finds the claim already there and reads it"`},
	"late":       {claimSurvives, `etcdlock/doc.go: "so a caller that gives up leaves no claim that others would queue behind"`},
	"latency":    {claimSurvives, `etcdlock/doc.go: "which is why Done is a hint to stop work, and the fencing token is the guarantee"`},
	"kill":       {claimSurvives, `etcdlock/doc.go: "waits for its deletion (a release, a revoked or expired lease)"`},
	"crash":      {claimSurvives, `etcdlock/doc.go: "survives the loss of a minority of etcd's members"`},
	"expiry":     {claimSurvives, `etcdlock/doc.go: "Lock never returns a hold whose Done has already closed"`},
}

var zklockClaims = map[string]claim{
	"pause":      {claimSurvives, `zklock/doc.go: "learns it only when it runs again. The resource must check the token"`},
	"lost-reply": {claimSurvives, `zklock/doc.go: "the Mutex finds its child by the token in its name"`},
	"late":       {claimSurvives, `zklock/doc.go: "and leaves no claim others would queue behind"`},
	"latency":    {claimSurvives, `zklock/doc.go: "learns it only when it runs again. The resource must check the token"`},
	"kill":       {claimSurvives, `zklock/doc.go: "ends by itself when its holder's session ends"`},
	"crash":      {claimSurvives, `zklock/doc.go: "survives the loss of a minority of the ensemble"`},
	"expiry":     {claimSurvives, `zklock/doc.go: "A Lock returns only on a connection that is alive with its child's session"`},
}

var pglockClaims = map[string]claim{
	"pause":      {claimSurvives, `pglock/doc.go: "nothing expires while the holder lives, so nothing is granted twice"`},
	"lost-reply": {claimSurvives, `pglock/doc.go: "which ends the session on the server and with it any lock the statement took"`},
	"late":       {claimSurvives, `pglock/doc.go: "which ends the session on the server and with it any lock the statement took"`},
	"latency":    {claimSurvives, `pglock/doc.go: "nothing expires while the holder lives, so nothing is granted twice"`},
	"kill":       {claimSurvives, `pglock/doc.go: "same connection or the session ends"`},
	"crash":      {claimSurvives, `pglock/doc.go: "every token drawn after a crash is larger than every one before it"`},
	"expiry":     {claimSurvives, `pglock/doc.go: "same connection or the session ends"`},
	"pooler":     {claimSurvives, `pglock/doc.go: "both locks work in session and in transaction pooling"`},
}

var pglockRowClaims = map[string]claim{
	"pause":      {claimSurvives, `pglock/doc.go: "nothing expires while the holder lives, so nothing is granted twice"`},
	"lost-reply": {claimSurvives, `pglock/doc.go: "either way the row lock is gone once the transaction ends"`},
	"late":       {claimSurvives, `pglock/doc.go: "either way the row lock is gone once the transaction ends"`},
	"latency":    {claimSurvives, `pglock/doc.go: "nothing expires while the holder lives, so nothing is granted twice"`},
	"kill":       {claimSurvives, `pglock/doc.go: "either way the row lock is gone once the transaction ends"`},
	"crash":      {claimSurvives, `pglock/doc.go: "every token drawn after a crash is larger than every one before it"`},
	"expiry":     {claimSurvives, `pglock/doc.go: "either way the row lock is gone once the transaction ends"`},
	"pooler":     {claimSurvives, `pglock/doc.go: "both locks work in session and in transaction pooling"`},
	"isolation":  {claimSurvives, `pglock/doc.go: "each of its statements sees every earlier holder's committed work, whatever default_transaction_isolation says"`},
}
