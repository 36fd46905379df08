//go:build !race

package labs

// raceEnabled reports whether the binary was built with -race.
const raceEnabled = false
