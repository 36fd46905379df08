-- count.lua: how many times this owner holds the lock.
--   KEYS[1]  the lock key
--   ARGV[1]  the owner id
-- Returns the owner's count, or 0 when it does not hold the lock. It only
-- reads, so running it twice is harmless.
return tonumber(redis.call("HGET", KEYS[1], ARGV[1]) or 0)
