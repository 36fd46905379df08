-- release.lua: delete the lock if this owner still holds it.
--
-- KEYS[1]  the lock key
-- KEYS[2]  this release's receipt: "<base>:r:<ARGV[1]>"
-- ARGV[1]  the owner value given to acquire.lua
-- ARGV[2]  how long the receipt lives, in milliseconds ("0": none, for
--          the preflight probe)
--
-- Returns  1 when the lock was ours and is deleted;
--          0 when it is gone or held by another owner (nothing changed).
-- The token counter is never touched: tokens must keep growing across holders.
--
-- Run twice (a reply lost, the command sent again), the second run finds
-- the key gone and answers from the receipt the first left: 1 again. A
-- release that finds the key not ours leaves a receipt too, "0": it marks
-- ARGV[1] released, so that an acquire.lua of it still on its way (held up
-- in the network after its Lock gave up) takes nothing when it lands.

if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call('set', KEYS[2], 1, 'px', ARGV[2])
  return 1
end
local r = redis.call('get', KEYS[2])
if not r and ARGV[2] ~= '0' then
  redis.call('set', KEYS[2], '0', 'px', ARGV[2])
end
return tonumber(r or 0)
