package lab11_test

import "github.com/locklab/locklab/labs"

// contractWrongFixes are wrong fixes the order rush can miss, caught by
// the key's contract (TestLab11_ExerciseContract). They join the lab's
// table.
var contractWrongFixes = []labs.WrongFix{
	{
		Name:   "sixteen striped locks, by the order id's last character",
		Edits:  key(`	return "lock:orders:" + orderID[len(orderID)-1:]`),
		Caught: "two orders share one lock",
	},
	{
		Name: "the order id cut to its first four characters",
		Edits: key(`	if len(orderID) > 4 {
		orderID = orderID[:4]
	}
	return "lock:order:" + orderID`),
		Caught: "two orders share one lock",
	},
}

func init() { wrongFixes = append(wrongFixes, contractWrongFixes...) }
