package history_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/history"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// ev builds a hand-made event at n ms.
func ev(n int, client string, kind history.Kind) history.Event {
	return history.Event{At: ms(n), Client: client, Kind: kind, OK: true}
}

func TestCheckOverlap(t *testing.T) {
	tests := []struct {
		name   string
		events []history.Event
		want   []string // sentences
	}{
		{
			name: "one after the other",
			events: []history.Event{
				ev(0, "A", history.Enter), ev(10, "A", history.Exit),
				ev(20, "B", history.Enter), ev(30, "B", history.Exit),
			},
		},
		{
			name: "touching intervals are not an overlap",
			events: []history.Event{
				ev(0, "A", history.Enter), ev(10, "A", history.Exit),
				ev(10, "B", history.Enter), ev(20, "B", history.Exit),
			},
		},
		{
			name: "B enters while A is inside",
			events: []history.Event{
				ev(0, "A", history.Enter), ev(5, "B", history.Enter),
				ev(12, "A", history.Exit), ev(20, "B", history.Exit),
			},
			want: []string{"A and B both in the critical section 5-12 ms"},
		},
		{
			name: "B inside A's stay",
			events: []history.Event{
				ev(0, "A", history.Enter), ev(410, "B", history.Enter),
				ev(431, "B", history.Exit), ev(500, "A", history.Exit),
			},
			want: []string{"A and B both in the critical section 410-431 ms"},
		},
		{
			name: "a client that never leaves stays inside to the end",
			events: []history.Event{
				ev(0, "A", history.Enter),
				ev(100, "B", history.Enter), ev(150, "B", history.Exit),
			},
			want: []string{"A and B both in the critical section 100-150 ms"},
		},
		{
			name: "same client entering twice is not an overlap",
			events: []history.Event{
				ev(0, "A", history.Enter), ev(5, "A", history.Enter), ev(10, "A", history.Exit),
			},
		},
		{
			name: "three clients, two overlaps",
			events: []history.Event{
				ev(0, "A", history.Enter), ev(10, "A", history.Exit),
				ev(20, "B", history.Enter), ev(40, "C", history.Enter),
				ev(50, "B", history.Exit), ev(60, "C", history.Exit),
				ev(55, "A", history.Enter), ev(70, "A", history.Exit),
			},
			want: []string{
				"B and C both in the critical section 40-50 ms",
				"C and A both in the critical section 55-60 ms",
			},
		},
		{
			name: "events out of order are sorted first",
			events: []history.Event{
				ev(20, "B", history.Exit), ev(0, "A", history.Enter),
				ev(5, "B", history.Enter), ev(12, "A", history.Exit),
			},
			want: []string{"A and B both in the critical section 5-12 ms"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sentences(history.Check(tt.events))
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Check() = %q; want %q", got, tt.want)
			}
		})
	}
}

func write(n int, client string, fence uint64, ok bool) history.Event {
	return history.Event{At: ms(n), Client: client, Kind: history.Write, Fence: fence, OK: ok}
}

func TestCheckStaleWrites(t *testing.T) {
	tests := []struct {
		name   string
		events []history.Event
		want   []string
	}{
		{
			name:   "increasing tokens",
			events: []history.Event{write(0, "A", 33, true), write(10, "B", 34, true), write(20, "A", 35, true)},
		},
		{
			name:   "stale write rejected is fine",
			events: []history.Event{write(0, "B", 34, true), write(10, "A", 33, false)},
		},
		{
			name:   "stale write accepted",
			events: []history.Event{write(400, "B", 34, true), write(520, "A", 33, true)},
			want:   []string{"A's write with token 33 accepted at 520 ms, older than B's token 34 accepted at 400 ms"},
		},
		{
			name:   "token reused by another client",
			events: []history.Event{write(400, "B", 34, true), write(520, "A", 34, true)},
			want:   []string{"A's write with token 34 accepted at 520 ms, the same as B's token 34 accepted at 400 ms"},
		},
		{
			name:   "same client writing twice with its token",
			events: []history.Event{write(0, "A", 7, true), write(5, "A", 7, true)},
		},
		{
			name:   "writes without fencing tokens are not checked",
			events: []history.Event{write(0, "A", 0, true), write(5, "B", 0, true)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sentences(history.Check(tt.events))
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Check() = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestCheckDeclaredViolation(t *testing.T) {
	events := []history.Event{
		{At: ms(5), Kind: history.Violation, Client: "B", Text: "B gave up after 1000 ms: the lock has no TTL"},
	}
	got := history.Check(events)
	if len(got) != 1 || got[0].Kind != "declared" || got[0].Sentence != events[0].Text {
		t.Fatalf("Check() = %+v; want the declared violation", got)
	}
}

func TestRenderLanesTokensAndViolation(t *testing.T) {
	tokA, tokB := "Zm9vYmFyYmF6cXV4MTIzNA", "cXV4cXV4cXV4cXV4cXV4cQ"
	events := []history.Event{
		{At: ms(0), Client: "A", Kind: history.Acquire, OK: true, Token: tokA},
		{At: ms(12), Client: "A", Kind: history.Enter},
		{At: ms(15), Kind: history.Fault, Text: "SIGSTOP A"},
		{At: ms(320), Kind: history.Fault, Text: "lock:order expired"},
		{At: ms(331), Client: "B", Kind: history.Acquire, OK: true, Token: tokB},
		{At: ms(333), Client: "B", Kind: history.Enter},
		{At: ms(410), Client: "A", Kind: history.Note, Text: "DEL lock:order (held " + tokB + ")"},
		{At: ms(431), Client: "B", Kind: history.Exit},
	}
	out := history.Render(events, history.Check(events))
	for _, want := range []string{
		"t(ms)  client A",
		"client B",
		"faults",
		"acquired tok=a1",
		"acquired tok=b1",
		"DEL lock:order (held b1)",
		"SIGSTOP A",
		"VIOLATION: A and B both in the critical section 333-431 ms",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Render() lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, tokA) || strings.Contains(out, tokB) {
		t.Errorf("Render() shows a raw token:\n%s", out)
	}
	// Lanes line up: B's events start in the same column.
	lines := strings.Split(out, "\n")
	col := -1
	for _, l := range lines {
		if strings.Contains(l, "tok=b1") {
			col = strings.Index(l, "acquired")
		}
	}
	if c := strings.Index(lines[0], "client B"); c != col {
		t.Errorf("B's lane starts at column %d in the header but %d in its rows:\n%s", c, col, out)
	}
}

func TestHistoryIsSafeForConcurrentUse(t *testing.T) {
	h := history.New(history.NewClock())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				h.Record(string(rune('A'+i)), history.Note, true, "x")
			}
		})
	}
	wg.Wait()
	ev := h.Events()
	if len(ev) != 800 {
		t.Fatalf("len(Events()) = %d; want 800", len(ev))
	}
	for i := 1; i < len(ev); i++ {
		if ev[i].At < ev[i-1].At {
			t.Fatalf("Events() not ordered by time at %d", i)
		}
	}
}

func TestClockAtSharesTheBase(t *testing.T) {
	c := history.NewClock()
	other := history.ClockAt(c.Base()) // what a child process builds
	a := c.Now()
	b := other.Now()
	if b < a || b-a > 50*time.Millisecond {
		t.Errorf("ClockAt(base).Now() = %v right after Now() = %v; want the same time line", b, a)
	}
}

func sentences(fs []history.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Sentence)
	}
	return out
}
