-- ttl.lua: report the lock key's remaining TTL, but only if it holds our token.
--
-- KEYS[1]  the lock key
-- ARGV[1]  the token this holder wrote when it acquired the lock
--
-- Returns the remaining TTL in milliseconds (>= 0) when the key holds ARGV[1];
--         -1 when the key holds ARGV[1] but has no TTL (someone ran PERSIST);
--         -2 when the key is missing (it expired) or holds another token
--            (another holder's lock), mirroring PTTL's "no such key".
--
-- It only reads, so running it twice is harmless.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PTTL", KEYS[1])
end
return -2
