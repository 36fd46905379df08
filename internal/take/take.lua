-- take.lua: take the lock for a token: SET key token NX PX ttl, unless
-- the token was released already. correct and watchdog take their key
-- with it; redlock takes each node's in a SET round.
--
-- KEYS[1]  the lock key
-- KEYS[2]  ARGV[1]'s receipt, "<base>:r:<ARGV[1]>": every release of
--          ARGV[1] leaves it, for at least a TTL (the locks' release.lua)
-- ARGV[1]  the attempt's token
-- ARGV[2]  the TTL in milliseconds
--
-- Returns 1 when the key now holds ARGV[1], with TTL ARGV[2], set by this
--           run;
--         2 when the key already held ARGV[1]: this script ran twice (its
--           reply lost and the command sent again), and nothing changed;
--         0 when ARGV[1] was released already: a run that lands after its
--           attempt was given up or its lock unlocked (held up in the
--           network, or sent again by a client after its caller gave
--           up), which must not take the key back for nobody;
--         the token the key holds, a string, when it holds another's
--           (redlock frees a node that a late SET of its own earlier round
--           holds).
--
-- A plain SET NX cannot tell the third case from the first: a SET that
-- lands after the give-up's release found nothing to release re-created
-- the key, and it stayed a whole TTL with nobody holding the lock.
--
-- Two calls on every path: the receipt first (a released token takes
-- nothing, whoever holds the key), then SET ... NX GET, which sets the key
-- if it is free and otherwise says whose token it holds (Redis 7.0).
if redis.call("GET", KEYS[2]) then -- GET, not EXISTS: the ACL of a lock's user lists GET
	return 0
end
local cur = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2], "GET")
if not cur then
	return 1
end
if cur == ARGV[1] then
	return 2
end
return cur
