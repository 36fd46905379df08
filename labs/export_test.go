package labs

import "testing"

// Names the harness's own tests (package labs_test) use that no lab does.
var (
	LockContractScenario = lockContractScenario
	ClientPid            = (*Client).pid
)

// RunExercise runs sc against impl as a run on a learner's exercise that
// must be safe (what Exercise does under -tags exercise).
func RunExercise(t *testing.T, sc Scenario, impl *Impl) {
	t.Helper()
	run(t, "Harness", "exercise", sc, impl, wantSafe, runOpts{spread: true, exercise: true, timeout: exerciseTimeout})
}
