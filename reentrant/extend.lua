-- extend.lua: renew the lease only if this owner holds the lock.
--   KEYS[1]  the lock key
--   ARGV[1]  the owner id
--   ARGV[2]  the new time to live, in milliseconds
-- Returns 1 when the TTL was set, 0 when this owner does not hold the lock
-- (nothing is changed then). Run twice, it sets the same TTL again, counted
-- from the second run.
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
    return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
