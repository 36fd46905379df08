-- release.lua: delete the lock only if it is still ours.
--   KEYS[1]  the lock key
--   KEYS[2]  this release's receipt: "<base>:r:<ARGV[1]>"
--   ARGV[1]  the token this holder wrote at acquire
--   ARGV[2]  how long the receipt lives, in milliseconds
-- Returns 1 when the key was ours and is now deleted, 0 when it was gone or
-- held by someone else (nothing is changed then).
--
-- Run twice (a reply lost, the command sent again), the second run finds
-- the key gone and answers from the receipt the first left: 1 again, not
-- "not held".
if redis.call("GET", KEYS[1]) == ARGV[1] then
    redis.call("DEL", KEYS[1])
    redis.call("SET", KEYS[2], 1, "PX", ARGV[2])
    return 1
end
return tonumber(redis.call("GET", KEYS[2]) or 0)
