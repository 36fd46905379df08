// Package contract holds only tests: one contract, run over every lock
// package, the way users run go-redis.
//
// Each lock kind (correct with and without a Notifier, redlock with and
// without, watchdog, reentrant, fencing) goes through the same scenarios,
// against real redis-server processes:
//
//   - with clients on go-redis's default options (a command whose reply is
//     lost is sent again, up to 3 times) behind a fault proxy that loses the
//     reply of the first command of the scenario, then of the second, and so
//     on until the scenario has no command left to lose: every operation in
//     turn (acquire, extend, release, joining a queue, leaving it, handing
//     over). Every operation must give the answer it would have given had
//     the reply not been lost, and the lock must never have two holders,
//     never be left held for a TTL, and leave no key without a TTL;
//   - with clients that never retry, losing each reply in turn: the
//     operation may fail, but nothing stalls and nothing is left behind;
//   - contended, with every fifth reply lost: no two holders, ever;
//   - for the kinds with a Notifier, the hand-off with no fault injected
//     (handoff_test.go): the queue's order, a dead waiter passed by, a
//     dead holder outlived, no lost wake-up, a waiter giving up, a closed
//     Notifier, a release of a key someone else took.
//
// The table of kinds is in kinds_test.go; adding a lock kind is one entry.
package contract
