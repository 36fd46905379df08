package labs

// Names the harness's own tests (package labs_test) use that no lab does.
var (
	LockContractScenario = lockContractScenario
	ClientPid            = (*Client).pid
)
