-- queued.lua: one check by a waiter in the queue, for when no hand-off
-- message came: the lock is free (its holder died and the key expired, or
-- it was released before we queued), or a message was lost.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the wait queue
-- ARGV[1]  the waiter's token
-- ARGV[2]  the TTL in milliseconds
--
-- Returns 2 when the key already holds ARGV[1]: the lock was handed to us
--           and the message did not arrive;
--         1 when the key was free and now holds ARGV[1] (taken), and
--           ARGV[1] is no longer in the queue;
--         0 when someone else holds the lock; ARGV[1] is in the queue (put
--           back at the end if a release skipped it, thinking it dead).
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return 2
end
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	redis.call("LREM", KEYS[2], 0, ARGV[1])
	return 1
end
if not redis.call("LPOS", KEYS[2], ARGV[1]) then
	redis.call("RPUSH", KEYS[2], ARGV[1])
end
return 0
