package watchdog

// Hook points, passed to the function given to [WithHook].
const (
	// HookBeforeAcquire fires before each SET NX try.
	HookBeforeAcquire = "before-acquire"
	// HookAcquired fires after SET NX succeeded, before Lock returns.
	HookAcquired = "acquired"
	// HookBeforeRenew fires in the refresher before each renewal. A hook
	// that blocks here delays the renewal: a paused holder.
	HookBeforeRenew = "before-renew"
	// HookRenewed fires in the refresher after a renewal succeeded.
	HookRenewed = "renewed"
	// HookRenewFailed fires in the refresher after a renewal failed with
	// an error that does not mean loss (a transport error); it is retried.
	HookRenewFailed = "renew-failed"
	// HookLost fires once when the lock is found lost: a renewal was
	// refused or the lease ran out.
	HookLost = "lost"
	// HookBeforeRelease fires before the release script runs, in Unlock
	// or in the refresher (holder's context ended, or the cap).
	HookBeforeRelease = "before-release"
	// HookReleased fires after the release script deleted the key.
	HookReleased = "released"
)
