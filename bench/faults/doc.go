// Package faults is the fault scoreboard: every lock under every fault
// schedule (schedules.go: one entry per schedule, each with its run
// function), in seeded runs whose clients are actors in this process or
// in child processes (the same binary, re-executed with env.FaultChildEnv
// set: its main must call FaultChildMain first), watched by a monitor and
// judged from their histories. Its result is data: the cells (CellResult)
// and their rows (FaultRow), which the report renders.
package faults
