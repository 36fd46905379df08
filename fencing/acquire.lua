-- acquire.lua: take the lock if it is free and hand out the next fencing token.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the token counter (same cluster slot as KEYS[1]; never deleted)
-- KEYS[3]  ARGV[1]'s receipt, "<base>:r:<ARGV[1]>": every release of
--          ARGV[1] leaves it, for at least a TTL (release.lua)
-- ARGV[1]  the owner value: a fresh random token for this attempt
-- ARGV[2]  the lease in milliseconds
--
-- Returns  the new fencing token (an integer >= 1) when the lock was free and
--          is now held with value ARGV[1] for ARGV[2] ms;
--          the same token again when the lock already holds ARGV[1]: this
--          is the script run twice (its first reply was lost and the
--          client sent it again), and no second token is consumed (while
--          the key holds ARGV[1] nobody else can acquire, so the counter
--          still holds ARGV[1]'s token);
--          0 when the lock is held by anyone else, or when ARGV[1] was
--          released already (a run that lands after its attempt was given
--          up, held up in the network: it must not take the lock back for
--          nobody, as a plain SET NX there did, for a whole TTL): nothing
--          was written and no token was consumed.
-- Errors   when the counter is not an integer (INCR fails before anything
--          is written) or would not be positive (the increment is undone).

local cur = redis.call('get', KEYS[1])
if cur == ARGV[1] then
  return tonumber(redis.call('get', KEYS[2]))
end
if cur then
  return 0
end
if redis.call('get', KEYS[3]) then
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
