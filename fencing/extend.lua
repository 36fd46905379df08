-- extend.lua: reset the lease if this owner still holds the lock.
--
-- KEYS[1]  the lock key
-- ARGV[1]  the owner value given to acquire.lua
-- ARGV[2]  the new lease in milliseconds, counted from now
--
-- Returns  1 when the lock was ours and now expires in ARGV[2] ms;
--          0 when it is gone or held by another owner (nothing changed).
-- The fencing token does not change: an extension is the same tenure. Run
-- twice, it sets the same lease again, counted from the second run.

if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
