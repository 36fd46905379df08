-- queued.lua: a queued waiter's own look at the lock, for when no hand-off
-- message came: its holder died and the key expired, a message was lost,
-- or a release passed the waiter by, thinking it dead.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the wait queue (see handoff.lua)
-- KEYS[3]  ARGV[1]'s receipt, "<base>:r:<ARGV[1]>" (see release.lua)
-- ARGV[1]  the waiter's token
-- ARGV[2]  the waiter's TTL in milliseconds
-- ARGV[3]  the prefix of waiters' channels ("correct:w:")
-- ARGV[4]  how long the queue lives at least, in milliseconds
--
-- Returns 2 when the key holds ARGV[1]: the lock was handed to us and the
--           message is late or lost;
--         1 when the key was free and no older live waiter was queued: it
--           now holds ARGV[1], which has left the queue;
--         0 when someone else holds the lock (perhaps an older waiter, just
--           handed it by this script) and ARGV[1] is still queued; the
--           queue's TTL is renewed;
--         3 when someone else holds the lock and ARGV[1] is not in the
--           queue: a release passed it by. The waiter must queue again,
--           under a new token, so that a late message for the old one
--           cannot be taken for a hand-off it never got; and when
--           ARGV[1] was released already (its waiter gave up, and this
--           look landed late), taking nothing.
--
-- Run twice, it answers the same (2 after 1, as the key then holds
-- ARGV[1]).
local got = claim(KEYS[1], KEYS[2], ARGV[3], ARGV[1], ARGV[2], KEYS[3])
if got then
	return got
end
if not redis.call("LPOS", KEYS[2], ARGV[1]) then
	return 3
end
keep(KEYS[2], ARGV[4])
return 0
