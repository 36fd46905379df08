//go:build race

package lab11_test

// raceEnabled reports whether the test binary was built with -race.
const raceEnabled = true
