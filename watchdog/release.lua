-- release.lua: delete the lock only if it is still ours.
--   KEYS[1]  the lock key
--   KEYS[2]  this release's receipt: "<base>:r:<ARGV[1]>"
--   ARGV[1]  the token this holder wrote at acquire
--   ARGV[2]  how long the receipt lives, in milliseconds
--            ("0": none, for the preflight probe)
-- Returns 1 when the key was ours and is now deleted, 0 when it was gone or
-- held by someone else (nothing is changed then but the receipt).
--
-- Run twice (a reply lost, the command sent again), the second run finds
-- the key gone and answers from the receipt the first left: 1 again, not
-- "not held". A release that finds the key not ours leaves a receipt too,
-- "0": it marks ARGV[1] released, so that an acquisition of it still on
-- its way (internal/take's take.lua, held up in the network after its
-- Lock gave up) takes nothing when it lands.
if redis.call("GET", KEYS[1]) == ARGV[1] then
    redis.call("DEL", KEYS[1])
    redis.call("SET", KEYS[2], 1, "PX", ARGV[2])
    return 1
end
local r = redis.call("GET", KEYS[2])
if not r and ARGV[2] ~= "0" then
    redis.call("SET", KEYS[2], "0", "PX", ARGV[2])
end
return tonumber(r or 0)
