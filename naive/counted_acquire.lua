-- counted_acquire.lua: take the lock, or take it once more.
-- KEYS[1]: the lock key, a hash: owner id -> count
-- ARGV[1]: the owner id; ARGV[2]: the TTL in milliseconds
-- Returns the owner's count after this acquire, or 0 when another owner
-- holds the lock.
-- Run twice (its reply lost, the command sent again), it counts twice:
-- the mistake package naive's Counted exists to show.
if redis.call("EXISTS", KEYS[1]) == 0 or redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
	local n = redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
	return n
end
return 0
