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
	{
		// Green before TestLab11_ExerciseKeySpread (issue 35): the key
		// contract's dozen ids fall into distinct stripes.
		Name: "1024 striped locks, by a CRC-32 of the order id",
		Edits: append(key(`	return fmt.Sprintf("lock:orders:%d", crc32.ChecksumIEEE([]byte(orderID))%1024)`),
			labs.Replace("package lab11\n", "package lab11\n\nimport (\n\t\"fmt\"\n\t\"hash/crc32\"\n)\n")),
		Caught: "Stripes, buckets or a hash cut short make workers of unrelated orders wait for each other",
	},
}

func init() { wrongFixes = append(wrongFixes, contractWrongFixes...) }
