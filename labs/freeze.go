package labs

// FreezeBefore starts op with arg on c, a client in a child process, and
// freezes the process (SIGSTOP) once op reaches the hook point: a
// stop-the-world pause with what follows point about to happen. It returns
// the call, still in flight, and whether c froze; when op returned without
// reaching point (it gave up before sending anything), c did not.
func (c *Client) FreezeBefore(point, op, arg string) (*Call, bool) {
	c.s.t.Helper()
	c.ParkAt(point)
	call := c.Go(op, arg)
	if _, parked := c.WaitParkedOr(call, point); !parked {
		return call, false
	}
	c.Freeze()
	return call, true
}

// Unfreeze resumes c, frozen by [Client.FreezeBefore], lets it go on past
// the hook point, and waits for call, the call FreezeBefore returned.
func (c *Client) Unfreeze(call *Call) error {
	c.s.t.Helper()
	c.Thaw()
	c.Continue()
	return call.Err()
}

// NotFrozen ends a paused-holder scene whose freeze did not happen
// ([Client.FreezeBefore] returned false: a's call gave up before it sent
// anything, so there is nothing to pause): it waits for the call, a
// releases its lock, and then b takes the lock, runs turn as the holder,
// and releases it.
func (s *Scene) NotFrozen(a *Client, call *Call, b *Client, turn func()) {
	s.t.Helper()
	s.Must(call.Err())
	a.ReleaseAfterFault()
	s.Must(b.Lock())
	turn()
	s.Must(b.Unlock())
}
