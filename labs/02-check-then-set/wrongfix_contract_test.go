package lab02_test

import "github.com/locklab/locklab/labs"

// shippedBody is ChargeOnce's code as shipped, below its marker: GET the
// marker, charge, SET the marker.
const shippedBody = `	err := client.Get(ctx, marker).Err()
	if err == nil {
		return false, nil // charged already
	}
	if !errors.Is(err, redis.Nil) {
		return false, err
	}
	if err := charge(ctx); err != nil {
		return false, err
	}
	return true, client.Set(ctx, marker, eventID, 0).Err()`

// contractWrongFixes are wrong fixes of the classes the README warns of and
// no table tried: a lock around the charge (the README's central warning:
// a lock can fail), state kept in the Go process, an error dropped. They
// join the lab's table.
var contractWrongFixes = []labs.WrongFix{
	{
		Name: "the right fix: claim with SET NX before the charge, give the claim back when it fails",
		Edits: body(`	claimed, err := client.SetNX(ctx, marker, eventID, 0).Result()
	if err != nil || !claimed {
		return false, err
	}
	if err := charge(ctx); err != nil {
		return false, errors.Join(err, client.Del(context.WithoutCancel(ctx), marker).Err())
	}
	return true, nil`),
		Right: true,
	},
	{
		Name: "the shipped GET, charge, SET, wrapped in a correct.Mutex",
		Edits: append(body(`	mu := correct.New(client, "lock:charge:"+orderID)
	if err := mu.Lock(ctx); err != nil {
		return false, err
	}
	defer mu.Unlock(ctx)
`+shippedBody), labs.Replace("\t\"github.com/redis/go-redis/v9\"\n", "\t\"github.com/redis/go-redis/v9\"\n\n\t\"github.com/locklab/locklab/correct\"\n")),
		Caught: "A lock around the charge is not enough",
	},
	{
		Name: "the shipped GET, charge, SET, behind a claim kept in the process (a sync.Map of orders)",
		Edits: append(body(`	if _, busy := claims.LoadOrStore(orderID, eventID); busy {
		return false, nil // this process has it
	}
	charged, err := func() (bool, error) {
`+shippedBody+`
	}()
	if err != nil {
		claims.Delete(orderID) // give the claim back: the provider delivers again
	}
	return charged, err
}

var claims sync.Map // orderID -> eventID, claimed in this process

func unused() {`), labs.Replace("\t\"errors\"\n", "\t\"errors\"\n\t\"sync\"\n")),
		Caught: "charged twice",
	},
	{
		Name: "claim with SET NX before the charge, given back on failure, but SET NX's error dropped",
		Edits: body(`	claimed, _ := client.SetNX(ctx, marker, eventID, 0).Result()
	if !claimed {
		return false, nil // charged already
	}
	if err := charge(ctx); err != nil {
		if derr := client.Del(ctx, marker).Err(); derr != nil {
			return false, errors.Join(err, derr)
		}
		return false, err
	}
	return true, nil`),
		Caught: "an error from Redis was dropped",
	},
}

// claimThen is the right fix's claim, with its lease, its give-back
// context and its answer after a failed charge as a wrong fix has them.
func claimThen(ttl, giveBackCtx, failed string) []labs.Edit {
	return body(`	claimed, err := client.SetNX(ctx, marker, eventID, ` + ttl + `).Result()
	if err != nil || !claimed {
		return false, err
	}
	if err := charge(ctx); err != nil {
		err = errors.Join(err, client.Del(` + giveBackCtx + `, marker).Err())
		return ` + failed + `
	}
	return true, nil`)
}

// effectWrongFixes are wrong fixes of the claim that no table tried
// (issue 35), each caught by a check of its effect: a marker that
// expires, a claim given back on a context that has ended, a failed
// charge reported as handled.
var effectWrongFixes = []labs.WrongFix{
	{
		Name:   "claim with SET NX and a lease of an hour, as a lock's key has",
		Edits:  claimThen("60*60*1e9", "context.WithoutCancel(ctx)", "false, err"),
		Caught: "A marker records a charge, it is not a lease: no TTL",
	},
	{
		Name:   "claim with SET NX, given back with the request's context",
		Edits:  claimThen("0", "ctx", "false, err"),
		Caught: "given back with the request's context, which had ended",
	},
	{
		Name:   "claim with SET NX, given back on failure, the charge's error dropped",
		Edits:  claimThen("0", "context.WithoutCancel(ctx)", "false, nil"),
		Caught: "the charge's error was dropped",
	},
}

func init() {
	wrongFixes = append(wrongFixes, contractWrongFixes...)
	wrongFixes = append(wrongFixes, effectWrongFixes...)
}
