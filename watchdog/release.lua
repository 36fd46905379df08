-- release.lua: delete the lock only if it is still ours.
--   KEYS[1]  the lock key
--   ARGV[1]  the token this holder wrote at acquire
-- Returns 1 when the key was ours and is now deleted, 0 when it was gone or
-- held by someone else (nothing is changed then).
if redis.call("GET", KEYS[1]) == ARGV[1] then
    return redis.call("DEL", KEYS[1])
end
return 0
