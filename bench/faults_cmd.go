package main

import "errors"

// runCommandFault runs schedules 2 (lost reply) and 3 (late delivery).
// They need per-command faults in internal/faultproxy; until the build has
// them, the schedules are reported as not run (see schedule.needs).
func runCommandFault(ev *event, late bool) error {
	return errors.New("per-command proxy faults are not in this build")
}
