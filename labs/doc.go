// Package labs is the harness the locklab labs run on. The original
// harness is what grades: a learner edits only a lab's exercise.go.
//
// A lab is a short scenario script, written once and run against several
// locks:
//
//	func blindDelete(s *labs.Scene, impl *labs.Impl) {
//		a, b := s.Client("A", impl), s.Process("B", impl)
//		s.Must(a.Lock())
//		a.Enter()
//		...
//	}
//
//	func TestLab03_BrokenDeletesOthersLock(t *testing.T) { labs.Broken(t, title, blindDelete, naiveLock) }
//	func TestLab03_FixedRefusesForeignDelete(t *testing.T) { labs.Fixed(t, title, blindDelete, correctLock) }
//	func TestLab03_Exercise(t *testing.T)                 { labs.Exercise(t, title, blindDelete, exerciseLock) }
//
// The pieces:
//
//   - [Locker] is what a lab needs from a lock. An [Impl] is a registered,
//     named recipe for one (see [Register]), so the same lock can be built
//     in a child process.
//   - A [Scene] owns one run: real redis-server nodes (internal/rig), the
//     history of events on one clock (internal/history), the clients, a
//     deadline (checkTimeout) and the key under test.
//   - A [Client] is remote control of one client: [Scene.Client] runs it in
//     a goroutine, [Scene.Process] in a child process (this test binary run
//     again, driven over a pipe), which the scenario can really crash
//     ([Client.Kill], SIGKILL) or freeze ([Client.Freeze], SIGSTOP). Both
//     speak the same protocol and record into the same history. When the
//     test ends, a client in this process releases what its lock still
//     holds, as a child's exit does: a hold kept in process memory (lab
//     00's mutex) never outlives its test, so every test starts free.
//   - Step control: locks call named hook points (naive.HookAfterSetNX...).
//     [Client.ParkAt] arms one; the client parks there, [Client.WaitParked]
//     returns, the scenario does what it needs, [Client.Continue] lets it
//     go on. Interleavings are forced, never left to sleeps.
//   - [Broken], [Fixed] and [Exercise] run a scenario, check the history
//     for overlapping critical sections and stale writes, print the MIT-style
//     banner and the timeline, and compare the timeline with the golden file
//     testdata/<TestName>.golden and the lab README's output block (go test
//     -update rewrites both). A broken run that shows no violation fails as
//     "harness went blind".
//   - Exploration: [ExploreBroken], [ExploreFixed] and [ExploreExercise]
//     run a lesson's [Race] under many schedules (the orders in which its
//     clients pass their hook points and its events happen): every
//     ordering where there are few, else a depth-first share and a seeded
//     random sample. A failing schedule prints the command that replays
//     it (LOCKLAB_SCHEDULE=<id> go test -run ...).
//   - Exercises: exercise.go starts as broken code. Built with -tags
//     exercise, [Exercise] demands the scenario be safe (red until the
//     learner fixes it). Without the tag it checks that an untouched
//     exercise.go (same SHA-256 as testdata/exercise.sha256) is still caught,
//     and skips once the learner has edited it, so a plain go test stays
//     green. LOCKLAB_RED=1 (make red) makes [Broken] demand safety, so the
//     broken lock's real failure is shown as a failing test. In a run on
//     the learner's exercise, a Lock that has not returned within 5x the
//     scene's lease (past its context's end) fails the test at once,
//     naming what it may wait on ([Scene.Store]: Redis unless the
//     scenario says etcd or PostgreSQL), instead of at the scene's
//     deadline.
//   - What exercises build on: [PollLock] (a Lock made of TryLock) and
//     [TakeKey] (SET NX PX), so that an exercise.go holds little more than
//     the code its learner must fix. A lab's table of wrong fixes edits
//     the shipped exercise with [Replace], [ReplaceFrom], [ReplaceInFunc]
//     and [ReplaceScript].
//
// Every lab package's TestMain is [Main], which also serves child processes.
package labs
