-- enqueue.lua: a waiter joins the lock's queue, or takes the lock if it
-- is free and nobody live is waiting for it.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the wait queue (see handoff.lua)
-- KEYS[3]  ARGV[1]'s receipt, "<base>:r:<ARGV[1]>" (see release.lua)
-- ARGV[1]  the waiter's token: "<notifier id>.<ttl ms>.<random>"
-- ARGV[2]  the waiter's TTL in milliseconds
-- ARGV[3]  the prefix of waiters' channels ("correct:w:")
-- ARGV[4]  how long the queue lives at least, in milliseconds
--
-- Returns 2 when the key already holds ARGV[1]: it was handed to us (this
--           is a second run of the script: its first reply was lost);
--         1 when the key was free: it now holds ARGV[1], with TTL ARGV[2];
--         0 when ARGV[1] is in the queue and someone else holds the lock;
--         3 when ARGV[1] was released already (its waiter gave up): a join
--           that lands late takes nothing and queues nothing.
--
-- Joining and looking at the lock are one step, so no release can fall
-- between them (the lost wake-up: a waiter that queues just after the
-- holder released with nobody queued would wait for a message that never
-- comes). A free lock goes to the oldest live waiter first, as a release
-- would give it. Run twice, the script finds ARGV[1] already queued (LPOS)
-- and does not add it again: a waiter queued twice would be handed the
-- lock a second time, when nobody waits for it any more.
local got = claim(KEYS[1], KEYS[2], ARGV[3], ARGV[1], ARGV[2], KEYS[3])
if got then
	return got
end
if not redis.call("LPOS", KEYS[2], ARGV[1]) then
	redis.call("RPUSH", KEYS[2], ARGV[1])
end
keep(KEYS[2], ARGV[4])
return 0
