package correct

// The steps at which the function given to [WithHook] is called.
const (
	// HookAcquired fires in Lock and TryLock right after the lock became
	// this Mutex's: the key holds its new token, [Mutex.Token] and
	// [Mutex.Until] report it, and Lock or TryLock has not yet returned.
	HookAcquired = "acquired"

	// HookBeforeRelease fires in Unlock when the Mutex believes it holds
	// the lock, right before the release script is sent. Parking here past
	// the TTL shows why release must check the token.
	HookBeforeRelease = "before-release"

	// HookRefused fires in Lock with a [Notifier] after its first try found the
	// lock taken and before the waiter joins the queue: the window in
	// which a release goes unseen by a waiter that only listens for
	// messages (the lost wake-up).
	HookRefused = "refused"

	// HookQueued fires in Lock with a [Notifier] right after the waiter's
	// token joined the wait queue, before it starts waiting for the
	// hand-off.
	HookQueued = "queued"
)
