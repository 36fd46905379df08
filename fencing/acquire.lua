-- acquire.lua: take the lock if it is free and hand out the next fencing token.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the token counter (same cluster slot as KEYS[1]; never deleted)
-- ARGV[1]  the owner value: a fresh random token for this attempt
-- ARGV[2]  the lease in milliseconds
--
-- Returns  the new fencing token (an integer >= 1) when the lock was free and
--          is now held with value ARGV[1] for ARGV[2] ms;
--          0 when the lock is held by anyone: nothing was written and no
--          token was consumed.
-- Errors   when the counter is not an integer (INCR fails before anything
--          is written) or would not be positive (the increment is undone).

if redis.call('exists', KEYS[1]) == 1 then
  return 0
end

local token = redis.call('incr', KEYS[2])
if token < 1 then
  redis.call('decr', KEYS[2])
  return redis.error_reply('fencing counter ' .. KEYS[2] .. ' is not positive')
end

-- The key is known to be free, so NX always succeeds; it stays as a guard.
redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
return token
