package fencing

// Hook points passed to the function given to [WithHook]. Each names the
// step of the protocol about to run or just finished.
const (
	// HookBeforeAcquire fires before each run of the acquire script, in
	// [Mutex.TryLock] and in every attempt of [Mutex.Lock].
	HookBeforeAcquire = "before-acquire"
	// HookAcquired fires after the acquire script granted the lock, when
	// [Mutex.Token] and [Mutex.Until] already report the new hold, before
	// Lock or TryLock returns. Parking a client here pauses a holder that
	// believes it holds the lock.
	HookAcquired = "acquired"
	// HookBeforeRelease fires in [Mutex.Unlock] before the release script.
	HookBeforeRelease = "before-release"
	// HookReleased fires in [Mutex.Unlock] after the release script deleted
	// the lock.
	HookReleased = "released"
	// HookBeforeExtend fires in [Mutex.Extend] before the extend script.
	HookBeforeExtend = "before-extend"
)
