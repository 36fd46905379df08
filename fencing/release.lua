-- release.lua: delete the lock if this owner still holds it.
--
-- KEYS[1]  the lock key
-- KEYS[2]  this release's receipt: "<base>:r:<ARGV[1]>"
-- ARGV[1]  the owner value given to acquire.lua
-- ARGV[2]  how long the receipt lives, in milliseconds
--
-- Returns  1 when the lock was ours and is deleted;
--          0 when it is gone or held by another owner (nothing changed).
-- The token counter is never touched: tokens must keep growing across holders.
--
-- Run twice (a reply lost, the command sent again), the second run finds
-- the key gone and answers from the receipt the first left: 1 again.

if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call('set', KEYS[2], 1, 'px', ARGV[2])
  return 1
end
return tonumber(redis.call('get', KEYS[2]) or 0)
