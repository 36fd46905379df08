-- extend.lua: renew the lease only if the lock is still ours.
--   KEYS[1]  the lock key
--   ARGV[1]  the token this holder wrote at acquire
--   ARGV[2]  the new time to live, in milliseconds
-- Returns 1 when the key was ours and now expires ARGV[2] ms from now, 0 when
-- it was gone or held by someone else (nothing is changed then: a renewal
-- never revives an expired lock or lengthens another holder's). Run twice,
-- it sets the same TTL again, counted from the second run; the lease is
-- counted from before the first.
if redis.call("GET", KEYS[1]) == ARGV[1] then
    return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
