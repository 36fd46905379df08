-- cancel.lua: undo one call of acquire.lua whose reply never came, when
-- the caller gives up on it: it may have run, it may still be on the wire.
--   KEYS[1]  the lock key
--   KEYS[2]  the call's receipt: "<base>:r:<ARGV[3]>"
--   ARGV[1]  the owner id
--   ARGV[2]  the time to live, in milliseconds, for a lock still held
--   ARGV[3]  the id of the call to undo
--   ARGV[4]  how long the receipt lives, in milliseconds
-- Returns 1 when the call had run and its count was taken back, 0 when it
-- had not run (it never will now), -1 when it had run but the hold has
-- ended since (expired, or released by the owner).
--
-- A receipt marks the call as done either way, so the call itself, should
-- it arrive late, answers from it and changes nothing. Run twice, cancel
-- finds its own receipt ("cancelled") and changes nothing more.
local done = redis.call("GET", KEYS[2])
if done == "cancelled" then
    return 0
end
redis.call("SET", KEYS[2], "cancelled", "PX", ARGV[4])
if not done or tonumber(done) == 0 then
    return 0
end
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
    return -1
end
if redis.call("HINCRBY", KEYS[1], ARGV[1], -1) <= 0 then
    redis.call("DEL", KEYS[1])
end
return 1
