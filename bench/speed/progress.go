package speed

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// progress reports the run on stderr: a redrawn bar with the current
// scenario, implementation, round and ETA when stderr is a terminal, and
// one plain line per step otherwise (pipes, CI=true).
type progress struct {
	w      io.Writer
	bar    bool
	total  int
	done   int
	start  time.Time
	perRun time.Duration // the planned time of one run, for the ETA before any run ended
}

// NewProgress decides between the bar and plain lines.
func NewProgress(w io.Writer, total int, perRun time.Duration) *progress {
	bar := false
	if f, ok := w.(*os.File); ok && os.Getenv("CI") != "true" {
		bar = term.IsTerminal(int(f.Fd()))
	}
	return &progress{w: w, bar: bar, total: total, start: time.Now(), perRun: perRun}
}

// Begin shows that s is starting.
func (p *progress) Begin(s Step, rounds int) {
	eta := p.eta()
	label := fmt.Sprintf("%s  %s  round %d/%d", s.Cell, s.Impl.Name, s.Round+1, rounds)
	if !p.bar {
		fmt.Fprintf(p.w, "[%d/%d] %s  ETA %s\n", p.done+1, p.total, label, fmtETA(eta))
		return
	}
	const width = 24
	filled := width * p.done / max(p.total, 1)
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d  %s  ETA %s",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		p.done+1, p.total, label, fmtETA(eta))
}

// End counts a finished step.
func (p *progress) End() { p.done++ }

// Finish clears the bar.
func (p *progress) Finish() {
	if p.bar {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "done: %d runs in %s\n", p.done, time.Since(p.start).Round(100*time.Millisecond))
}

func (p *progress) eta() time.Duration {
	left := p.total - p.done
	if p.done == 0 {
		return time.Duration(left) * p.perRun
	}
	return time.Since(p.start) / time.Duration(p.done) * time.Duration(left)
}

func fmtETA(d time.Duration) string { return d.Round(time.Second).String() }
