package reentrant

// Hook points, passed to the function given to [WithHook].
const (
	// HookBeforeAcquire fires before each run of the acquire script.
	HookBeforeAcquire = "before-acquire"
	// HookAcquired fires after the acquire script took or re-entered the
	// lock, before Lock returns.
	HookAcquired = "acquired"
	// HookBeforeRelease fires before the release script runs.
	HookBeforeRelease = "before-release"
	// HookReleased fires after the release script decremented the count
	// (and deleted the key if it reached 0).
	HookReleased = "released"
)
