-- extend.lua: reset the lock key's TTL only if it still holds our token.
--
-- KEYS[1]  the lock key
-- ARGV[1]  the token this client holds the lock with
-- ARGV[2]  the new TTL in milliseconds
--
-- Returns 1 if the key held the token and its TTL was set, 0 if the key was
-- missing (expired) or held another client's token (left untouched). Run
-- twice, it sets the same TTL again, counted from the second run; the
-- validity is counted from before the first.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
