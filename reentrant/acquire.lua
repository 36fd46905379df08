-- acquire.lua: take the lock, or take it once more if this owner holds it.
--   KEYS[1]  the lock key: a hash with one field, owner id -> count
--   KEYS[2]  this call's receipt: "<base>:r:<ARGV[3]>"
--   ARGV[1]  the owner id
--   ARGV[2]  the time to live, in milliseconds
--   ARGV[3]  the call's id: fresh random for every Lock attempt
--   ARGV[4]  how long the receipt lives, in milliseconds
-- Returns the owner's count after this acquire (1 for a first acquire, 2 or
-- more for a re-entry), or 0 when another owner holds the lock (nothing is
-- changed then).
--
-- The TTL is set to ARGV[2] on a first acquire; a re-entry only lengthens
-- it, never shortens it: an inner Lock with a shorter TTL than the outer
-- one's (or than a watchdog keeps renewing) must not let the key expire
-- under the outer holder.
--
-- Run twice (a reply lost, the command sent again), a second HINCRBY would
-- count one Lock twice, and the key would outlive the matching Unlock. So
-- every acquire leaves a receipt with its count, and a second run of the
-- same call (same ARGV[3]) answers from it, changing nothing.
local done = redis.call("GET", KEYS[2])
if done then
    return tonumber(done) or 0 -- "cancelled" (cancel.lua): it did nothing
end
if redis.call("EXISTS", KEYS[1]) == 0 then
    redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
    redis.call("PEXPIRE", KEYS[1], ARGV[2])
    redis.call("SET", KEYS[2], 1, "PX", ARGV[4])
    return 1
end
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
    local count = redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
    if redis.call("PTTL", KEYS[1]) < tonumber(ARGV[2]) then
        redis.call("PEXPIRE", KEYS[1], ARGV[2])
    end
    redis.call("SET", KEYS[2], count, "PX", ARGV[4])
    return count
end
return 0
