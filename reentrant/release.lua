-- release.lua: undo one acquire by this owner.
--   KEYS[1]  the lock key
--   ARGV[1]  the owner id
--   ARGV[2]  the time to live, in milliseconds, for a lock still held
-- Returns -1 when this owner does not hold the lock (nothing is changed),
-- the count left (and the TTL reset to ARGV[2]) while it still holds it, or
-- 0 when that was the last hold and the key is deleted.
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
    return -1
end
local count = redis.call("HINCRBY", KEYS[1], ARGV[1], -1)
if count > 0 then
    redis.call("PEXPIRE", KEYS[1], ARGV[2])
    return count
end
redis.call("DEL", KEYS[1])
return 0
