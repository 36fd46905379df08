-- extend.lua: reset the lock key's TTL, but only if it still holds our token.
--
-- KEYS[1]  the lock key
-- ARGV[1]  the token this holder wrote when it acquired the lock
-- ARGV[2]  the new TTL in milliseconds, counted from now
--
-- Returns 1 when the key held ARGV[1] and its TTL is now ARGV[2];
--         0 when the key is missing (it expired) or holds another token
--           (another holder's lock), and nothing was changed.
--
-- The compare and the PEXPIRE run as one step, so a holder whose lock has
-- expired can never lengthen the next holder's lock. Run twice (a reply
-- lost, the command sent again), it sets the same TTL again, counted from
-- the second run: the holder counts its lease from before the first.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
