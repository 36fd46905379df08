-- counted_release.lua: take one count back; delete the key at zero.
-- KEYS[1]: the lock key; ARGV[1]: the owner id; ARGV[2]: the TTL in ms
-- Returns the count left (0: the key was deleted), or -1 when this owner
-- does not hold the lock.
-- Run twice (its reply lost, the command sent again), it takes two counts
-- back: an outer hold is freed under its holder.
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
	return -1
end
local n = redis.call("HINCRBY", KEYS[1], ARGV[1], -1)
if n > 0 then
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
	return n
end
redis.call("DEL", KEYS[1])
return 0
