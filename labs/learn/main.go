// Command learn is the labs' companion for learners and trainers:
//
//	go run ./labs/learn            # progress: which exercises are solved (make progress)
//	go run ./labs/learn reset 03   # restore lab 03's exercise.go as shipped (make reset LAB=03)
//	go run ./labs/learn doctor     # pre-flight for a laptop or a room (make doctor)
//
// Progress tests every exercise.go that has been edited (go test -tags
// exercise, as make exercise does) and lists each lab as solved, still red
// or not started, with the next lab to do. go test ./labs/... ends with the
// same summary (this package's test, which sorts after the labs).
package main

import (
	"fmt"
	"os"
)

func main() {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "learn:", err)
		os.Exit(2)
	}
	args := os.Args[1:]
	switch {
	case len(args) == 0 || args[0] == "progress":
		labs, err := progress(root, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "learn:", err)
			os.Exit(1)
		}
		fmt.Print(summary(labs))
	case args[0] == "reset" && len(args) == 2:
		if err := reset(root, args[1], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "learn: reset:", err)
			os.Exit(1)
		}
	case args[0] == "doctor" && len(args) == 1:
		if !doctor(root, os.Stdout, checks) {
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: go run ./labs/learn [progress | reset NN | doctor]")
		os.Exit(2)
	}
}
