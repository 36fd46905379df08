package lab10

import "github.com/locklab/locklab/internal/token"

// hold is the token of a lock's current hold (a token.Slot): the wake-all
// locks and BlindHandoff keep theirs in one (the exercise keeps its own,
// in plain sight).
type hold struct{ slot token.Slot }

// Token returns the current hold's token, or "".
func (h *hold) Token() string { return h.slot.Get() }

func (h *hold) set(tok string) { h.slot.Set(tok) }

// take returns the token and forgets it: the first step of an Unlock.
func (h *hold) take() string { return h.slot.Take() }
