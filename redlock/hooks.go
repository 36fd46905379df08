package redlock

// Hook points, passed to the function given to [WithHook].
const (
	// HookAcquiredQuorum fires during an acquisition once a majority of
	// nodes hold this Mutex's token (a majority has answered OK, or, with
	// a [Notifier], handed the lock over), before the validity left is
	// computed. A client parked here for longer than the
	// TTL is Kleppmann's paused client: its keys expire meanwhile, and the
	// validity check, which measures the pause too, refuses the lock.
	HookAcquiredQuorum = "acquired-quorum"
	// HookBeforeRelease fires before the release script is sent to the
	// nodes: in [Mutex.Unlock], and when an attempt that did not obtain the
	// lock cleans up the nodes it did get (or, with a [Notifier], leaves
	// the queues).
	HookBeforeRelease = "before-release"

	// HookRefused fires, in Lock with a [Notifier], after the first SET
	// round missed a majority (the lock looked free, but was taken),
	// before the waiter joins the queues: the window in which a release
	// goes unseen by a waiter that only listens for messages (the lost
	// wake-up).
	HookRefused = "refused"

	// HookQueued fires, in Lock with a [Notifier], after the waiter's
	// first round in the queues, when that round did not already give it
	// the lock, before it starts waiting for hand-offs.
	HookQueued = "queued"
)
