-- release.lua: delete the lock if this owner still holds it.
--
-- KEYS[1]  the lock key
-- ARGV[1]  the owner value given to acquire.lua
--
-- Returns  1 when the lock was ours and is deleted;
--          0 when it is gone or held by another owner (nothing changed).
-- The token counter is never touched: tokens must keep growing across holders.

if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
