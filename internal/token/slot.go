package token

import "sync"

// Slot is the token of a lock's current hold, "" when it is not held, safe
// for concurrent use: what a lock that keeps one token at a time reads in
// Token, sets when it takes the key and takes back in Unlock. The zero Slot
// holds none.
type Slot struct {
	mu  sync.Mutex // protects tok
	tok string
}

// Get returns the current hold's token, or "".
func (s *Slot) Get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tok
}

// Set records tok as the current hold's token.
func (s *Slot) Set(tok string) {
	s.mu.Lock()
	s.tok = tok
	s.mu.Unlock()
}

// Take returns the current hold's token and forgets it, in one step: the
// first step of an Unlock, so that two Unlocks cannot both release it.
func (s *Slot) Take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok := s.tok
	s.tok = ""
	return tok
}
