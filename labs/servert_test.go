package labs

import (
	"testing"
	"time"
)

// TestServerTIsQuietInExerciseRuns: a scenario's own servers (etcd,
// ZooKeeper, PostgreSQL in labs 13 and 14) get a test that never reports
// failing in an exercise run, so the rig leaves their logs out of a
// learner's failure, as it does for Redis; elsewhere they get the scene's
// test, and a failing lab shows them.
func TestServerTIsQuietInExerciseRuns(t *testing.T) {
	s := newScene(t, time.Second)
	if s.ServerT() != testing.TB(t) {
		t.Error("ServerT outside an exercise run is not the scene's test")
	}
	s.exercise = true
	if _, ok := s.ServerT().(quietTB); !ok || s.ServerT().Failed() {
		t.Errorf("ServerT in an exercise run = %T; want a quietTB, which never reports failing", s.ServerT())
	}
}
