-- release.lua: delete the lock key, but only if it still holds our token.
--
-- KEYS[1]  the lock key
-- ARGV[1]  the token this holder wrote when it acquired the lock
--
-- Returns 1 when the key held ARGV[1] and was deleted;
--         0 when the key is missing (it expired) or holds another token
--           (another holder's lock), and nothing was changed.
--
-- GET and DEL run inside one script, and Redis runs a script to the end
-- before it serves any other command. A GET then DEL sent from the client
-- leaves a gap in which the key can expire and be taken by someone else,
-- whose lock the DEL would then delete.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
