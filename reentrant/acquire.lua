-- acquire.lua: take the lock, or take it once more if this owner holds it.
--   KEYS[1]  the lock key: a hash with one field, owner id -> count
--   ARGV[1]  the owner id
--   ARGV[2]  the time to live, in milliseconds
-- Returns the owner's count after this acquire (1 for a first acquire, 2 or
-- more for a re-entry; the TTL is set to ARGV[2] either way), or 0 when
-- another owner holds the lock (nothing is changed then).
if redis.call("EXISTS", KEYS[1]) == 0 or redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
    local count = redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
    redis.call("PEXPIRE", KEYS[1], ARGV[2])
    return count
end
return 0
