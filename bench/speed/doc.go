// Package speed is the bench's speed runner: the plan of cells (scenario,
// clients, hold, keys, server kind) from a Config, the runs of every lock
// in every cell and round, each run's figures (Row, one per lock and cell),
// redis-benchmark's ceiling and the progress line. It knows nothing of the
// fault scoreboard or of the report that renders its rows.
package speed
