package history

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// FaultLane is the name of the last lane, where faults and notes without a
// client go.
const FaultLane = "faults"

const (
	// laneWidth is a client lane's width. It does not grow with the texts,
	// so the layout is the same from run to run whatever numbers the texts
	// carry; a longer text runs on into the next lane (each row holds one
	// event).
	laneWidth = 26
	maxRows   = 240
)

// Render draws events (in any order) as an ASCII swim-lane timeline: one
// lane per client in order of first appearance, then the faults lane, times
// in ms from the clock's zero. Random tokens are shown as short aliases
// (a client's first token is "a1" for client "A"), so the picture reads the
// same from run to run. Each finding is named on its own line at the end.
func Render(events []Event, findings []Finding) string {
	ev := slices.Clone(events)
	Sort(ev)
	alias := tokenAliases(ev)

	var lanes []string
	laneOf := map[string]int{}
	for _, e := range ev {
		if e.Client != "" {
			if _, ok := laneOf[e.Client]; !ok {
				laneOf[e.Client] = len(lanes)
				lanes = append(lanes, "client "+e.Client)
			}
		}
	}
	faultLane := len(lanes)
	lanes = append(lanes, FaultLane)

	type row struct {
		at   string
		lane int
		text string
	}
	var rows []row
	width := make([]int, len(lanes))
	for i, l := range lanes {
		width[i] = max(laneWidth, utf8.RuneCountInString(l)+2)
	}
	for _, e := range ev {
		if e.Kind == Violation {
			continue // named at the end
		}
		lane := faultLane
		if e.Client != "" {
			lane = laneOf[e.Client]
		}
		text := describe(e, alias)
		rows = append(rows, row{at: fmt.Sprintf("%d", e.At.Milliseconds()), lane: lane, text: text})
	}

	var b strings.Builder
	line := func(at string, lane int, text string) {
		fmt.Fprintf(&b, "%7s  ", at)
		for i := 0; i < lane; i++ {
			b.WriteString(strings.Repeat(" ", width[i]))
		}
		b.WriteString(text)
		b.WriteString("\n")
	}
	header := func() {
		fmt.Fprintf(&b, "%7s  ", "t(ms)")
		for i, l := range lanes {
			if i == len(lanes)-1 {
				b.WriteString(l)
			} else {
				b.WriteString(pad(l, width[i]))
			}
		}
		b.WriteString("\n")
	}
	header()
	if len(rows) > maxRows {
		head, tailN := maxRows*2/3, maxRows/3
		for _, r := range rows[:head] {
			line(r.at, r.lane, r.text)
		}
		fmt.Fprintf(&b, "%7s  (%d events omitted)\n", "...", len(rows)-head-tailN)
		rows = rows[len(rows)-tailN:]
	}
	for _, r := range rows {
		line(r.at, r.lane, r.text)
	}
	for _, f := range findings {
		fmt.Fprintf(&b, "  VIOLATION: %s\n", replaceTokens(f.Sentence, alias))
	}
	return b.String()
}

func pad(s string, w int) string {
	if n := utf8.RuneCountInString(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s + " "
}

// describe is an event's text in its lane.
func describe(e Event, alias map[string]string) string {
	tok := ""
	switch {
	case e.Fence != 0:
		tok = fmt.Sprintf(" tok=%d", e.Fence)
	case e.Token != "":
		tok = " tok=" + alias[e.Token]
	}
	text := replaceTokens(e.Text, alias)
	switch e.Kind {
	case Want:
		return or(text, "wants the lock")
	case Acquire:
		if e.OK {
			return "acquired" + tok + suffix(text)
		}
		return "not acquired" + suffix(text)
	case Release:
		if e.OK {
			return "released" + tok + suffix(text)
		}
		return "unlock failed" + suffix(text)
	case Enter:
		return "enter" + suffix(text)
	case Exit:
		return "exit" + suffix(text)
	case Write:
		verdict := "rejected"
		if e.OK {
			verdict = "accepted"
		}
		return "write" + suffix(text) + tok + " → " + verdict
	default:
		return text
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	if strings.HasPrefix(s, "(") || strings.HasPrefix(s, ":") {
		return " " + s
	}
	return ": " + s
}

// tokenAliases names random tokens after the client that first acquired
// them: "a1", "a2" for client A's first and second token; tokens only ever
// mentioned elsewhere become "t1", "t2".
func tokenAliases(ev []Event) map[string]string {
	alias := map[string]string{}
	perClient := map[string]int{}
	for _, e := range ev {
		if e.Token == "" || alias[e.Token] != "" || e.Kind != Acquire || e.Client == "" {
			continue
		}
		perClient[e.Client]++
		prefix := strings.ToLower(e.Client)
		if utf8.RuneCountInString(prefix) > 1 {
			prefix += "-"
		}
		alias[e.Token] = fmt.Sprintf("%s%d", prefix, perClient[e.Client])
	}
	others := 0
	for _, e := range ev {
		if e.Token != "" && alias[e.Token] == "" {
			others++
			alias[e.Token] = fmt.Sprintf("t%d", others)
		}
	}
	return alias
}

// replaceTokens swaps raw tokens in s for their aliases.
func replaceTokens(s string, alias map[string]string) string {
	if s == "" {
		return s
	}
	for tok, a := range alias {
		if len(tok) >= 8 {
			s = strings.ReplaceAll(s, tok, a)
		}
	}
	return s
}
