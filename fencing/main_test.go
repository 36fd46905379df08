package fencing_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
)

var (
	redisAddr string        // the shared server started by TestMain
	rdb       *redis.Client // a client of it, closed with the server
	keySeq    atomic.Int64  // makes every test's key unique
)

func TestMain(m *testing.M) {
	if path := os.Getenv(childStoreEnv); path != "" {
		os.Exit(childWriter(path))
	}
	rig.Main(m, 1, func(nodes []*rig.Node) {
		redisAddr = nodes[0].Addr()
		rdb = nodes[0].Client()
	})
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// newKey returns a lock key unique to this test run. At cleanup it checks
// that the lock key is gone and that the only key left is the documented
// counter, then deletes the counter so the shared server stays clean.
func newKey(t *testing.T) string {
	t.Helper()
	n := keySeq.Add(1)
	key := fmt.Sprintf("test:%d:%s", n, unsafeName.ReplaceAllString(t.Name(), "_"))
	counter, err := fencing.CounterKey(key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		left := locktest.ScanKeys(t, rdb, fmt.Sprintf("*test:%d:*", n))
		for _, k := range left {
			if k != counter && !keyslot.IsReceipt(key, k) {
				t.Errorf("key %q left in Redis; want only the counter %q (and release receipts, which expire)", k, counter)
			}
		}
		_ = rdb.Del(ctx, left...).Err()
	})
	return key
}

// counterValue reads the token counter of key (0 when absent).
func counterValue(t *testing.T, key string) fencing.Token {
	t.Helper()
	counter, err := fencing.CounterKey(key)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rdb.Get(context.Background(), counter).Uint64()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		t.Fatalf("GET %q: %v", counter, err)
	}
	return fencing.Token(v)
}

// The child writer: TestStoreAcrossProcesses runs this test binary again
// with childStoreEnv set, as a second process using the same database file.
const childStoreEnv = "FENCING_TEST_CHILD_STORE"

// childWriter opens the store at path, prints "ready", plays the child's
// side of the two-process protocol (see crossProcess) and prints the tokens
// its contended writes got accepted, one "ok N" line each. Errors go to
// stderr with exit code 1.
func childWriter(path string) int {
	ctx := context.Background()
	s, err := fencing.OpenStore(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	fmt.Println("ready")
	accepted, err := crossProcess(ctx, s, "child")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, tok := range accepted {
		fmt.Println("ok", tok)
	}
	return 0
}

// The two-process protocol, run by the parent and the child on one file.
const (
	pingPongRounds = 10   // phase 1: 2*rounds alternating writes
	raceFirst      = 1000 // phase 2: both write tokens raceFirst..raceLast
	raceLast       = 1049
)

// crossProcess plays one side ("parent" writes even tokens, "child" odd) of
// two phases on row "shared":
//
//  1. Ping-pong: a side waits until the row's token is the one just below
//     its next token (written by the other process), writes it, which must
//     be accepted, then writes it again, which must be refused as stale.
//  2. Race: both sides write tokens raceFirst..raceLast in order at once.
//     Every write must be accepted or refused as stale; crossProcess
//     returns the accepted tokens, so the parent can check that no token
//     was accepted in both processes.
func crossProcess(ctx context.Context, s *fencing.Store, who string) ([]fencing.Token, error) {
	first := fencing.Token(1)
	if who == "parent" {
		first = 2
	}
	for tok := first; tok <= 2*pingPongRounds; tok += 2 {
		if err := waitToken(ctx, s, tok-1); err != nil {
			return nil, fmt.Errorf("%s: %w", who, err)
		}
		if err := s.Write(ctx, "shared", who, tok); err != nil {
			return nil, fmt.Errorf("%s: ping-pong Write(%d) = %w; want nil", who, tok, err)
		}
		if err := s.Write(ctx, "shared", who+" again", tok); !errors.Is(err, fencing.ErrStaleToken) {
			return nil, fmt.Errorf("%s: second Write(%d) = %v; want ErrStaleToken", who, tok, err)
		}
	}
	if err := waitToken(ctx, s, 2*pingPongRounds); err != nil {
		return nil, fmt.Errorf("%s: %w", who, err)
	}
	var accepted []fencing.Token
	for tok := fencing.Token(raceFirst); tok <= raceLast; tok++ {
		err := s.Write(ctx, "shared", fmt.Sprint(who, " ", tok), tok)
		switch {
		case err == nil:
			accepted = append(accepted, tok)
		case !errors.Is(err, fencing.ErrStaleToken):
			return nil, fmt.Errorf("%s: race Write(%d) = %w; want nil or ErrStaleToken", who, tok, err)
		}
	}
	return accepted, nil
}

// waitToken polls until row "shared" has accepted token want, for 10s at most.
func waitToken(ctx context.Context, s *fencing.Store, want fencing.Token) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, last, err := s.Read(ctx, "shared")
		if err != nil {
			return err
		}
		if last >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("row still at token %d after 10s; want %d", last, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// redisClient returns a new client of the shared server with its own
// connection pool, as a separate process would have, closed at cleanup.
func redisClient(t *testing.T) *redis.Client {
	return locktest.Client(t, redisAddr)
}
