-- release.lua: undo one acquire by this owner.
--   KEYS[1]  the lock key
--   KEYS[2]  this call's receipt: "<base>:r:<ARGV[3]>"
--   ARGV[1]  the owner id
--   ARGV[2]  the time to live, in milliseconds, for a lock still held
--   ARGV[3]  the call's id: fresh random for every Unlock
--   ARGV[4]  how long the receipt lives, in milliseconds
-- Returns -1 when this owner does not hold the lock (nothing is changed),
-- the count left while it still holds it, or 0 when that was the last hold
-- and the key is deleted.
--
-- While the count stays above 0 the TTL is lengthened to ARGV[2] if it is
-- shorter, never shortened (see acquire.lua).
--
-- Run twice (a reply lost, the command sent again), a second HINCRBY -1
-- would undo an outer hold too: the key deleted under its holder, and
-- another owner in. So every release leaves a receipt with its answer, and
-- a second run of the same call answers from it, changing nothing.
local done = redis.call("GET", KEYS[2])
if done then
    return tonumber(done)
end
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
    return -1
end
local count = redis.call("HINCRBY", KEYS[1], ARGV[1], -1)
if count > 0 then
    if redis.call("PTTL", KEYS[1]) < tonumber(ARGV[2]) then
        redis.call("PEXPIRE", KEYS[1], ARGV[2])
    end
else
    redis.call("DEL", KEYS[1])
end
redis.call("SET", KEYS[2], count, "PX", ARGV[4])
return count
