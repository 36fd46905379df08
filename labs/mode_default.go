//go:build !exercise

package labs

// exerciseMode is true when the tests are built with -tags exercise.
const exerciseMode = false
