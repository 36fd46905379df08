-- take.lua: an attempt to take the lock: SET key token NX PX ttl, unless
-- this token was released already.
--
-- KEYS[1]  the lock key
-- KEYS[2]  ARGV[1]'s receipt, "<base>:r:<ARGV[1]>": every release of
--          ARGV[1] leaves it, for at least a TTL (release.lua)
-- ARGV[1]  the attempt's token
-- ARGV[2]  the TTL in milliseconds
--
-- Returns 1 when the key now holds ARGV[1], with TTL ARGV[2], set by this
--           run;
--         2 when the key already held ARGV[1]: this script ran twice (its
--           reply lost and the command sent again), and nothing changed;
--         0 when the key holds another token: someone holds the lock;
--         3 when ARGV[1] was released already: a run that lands after its
--           attempt was given up (held up in the network, or sent again
--           by a client after its caller gave up), which must not take
--           the lock back for nobody.
--
-- A plain SET NX cannot tell the last case from the second: a SET that
-- lands after the give-up's release found nothing to release re-created
-- the key, and it stayed a whole TTL with nobody holding the lock.
local cur = redis.call("GET", KEYS[1])
if cur == ARGV[1] then
	return 2
end
if cur then
	return 0
end
if redis.call("GET", KEYS[2]) then -- GET, not EXISTS: the ACL of a lock's user lists GET
	return 3
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
return 1
