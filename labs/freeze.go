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
