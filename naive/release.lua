-- release.lua: delete the lock only if we still hold it (owner check and
-- delete in one atomic step).
-- KEYS[1]: the lock key
-- ARGV[1]: our token
-- Returns 1 when the key held our token and was deleted, 0 otherwise.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
