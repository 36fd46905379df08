package labs

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPollLock(t *testing.T) {
	errDown := errors.New("down")
	for _, tc := range []struct {
		name    string
		answers []error // nil: refused; errTaken: taken; another: that error
		cancel  bool
		want    error
		calls   int
	}{
		{name: "taken on the third try", answers: []error{nil, nil, errTaken}, want: nil, calls: 3},
		{name: "an error ends it", answers: []error{nil, errDown}, want: errDown, calls: 2},
		{name: "ctx ends it", answers: []error{nil}, cancel: true, want: context.Canceled, calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			calls := 0
			try := func(context.Context) (bool, error) {
				a := tc.answers[min(calls, len(tc.answers)-1)]
				calls++
				if tc.cancel {
					cancel()
				}
				if a == errTaken {
					return true, nil
				}
				return false, a
			}
			start := time.Now()
			err := PollLock(ctx, try)
			if !errors.Is(err, tc.want) || err != nil && tc.want == nil {
				t.Errorf("PollLock = %v; want %v", err, tc.want)
			}
			if calls != tc.calls {
				t.Errorf("PollLock tried %d times; want %d", calls, tc.calls)
			}
			if wait := time.Duration(tc.calls-1) * PollInterval; !tc.cancel && time.Since(start) < wait {
				t.Errorf("PollLock took %v for %d tries; want at least %v between tries", time.Since(start), tc.calls, PollInterval)
			}
		})
	}
}

// errTaken marks, in TestPollLock's answers, a try that took the lock.
var errTaken = errors.New("taken")
