-- release.lua: delete the lock key only if it still holds our token.
--
-- KEYS[1]  the lock key
-- ARGV[1]  the token this client stored with SET NX
--
-- Returns 1 if the key held the token and was deleted, 0 if the key was
-- missing (expired) or held another client's token (left untouched).
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
