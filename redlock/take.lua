-- take.lua: a SET round's acquisition on one node: SET key token NX PX
-- ttl, unless this token was released on this node already.
--
-- KEYS[1]  the lock key
-- KEYS[2]  ARGV[1]'s receipt, "<base>:r:<ARGV[1]>": every release of
--          ARGV[1] on this node leaves it (release.lua), for at least a TTL
-- ARGV[1]  the attempt's token
-- ARGV[2]  the TTL in milliseconds
--
-- Returns 1 when the key now holds ARGV[1], set by this run;
--         2 when the key already held ARGV[1]: this script run twice (its
--           reply lost and the command sent again), nothing changed;
--         0 when ARGV[1] was released on this node already: a run that
--           lands after its attempt was given up or its lock unlocked
--           (held up in the network, or sent by a client after its caller
--           gave up), which must not take the node back for nobody;
--         the token the key holds, a string, when it holds another's.
--
-- A plain SET NX cannot tell the third case from the first: a late SET
-- re-created the key after the release had found nothing to release, and
-- the node kept it for a whole TTL with nobody holding the lock.
local cur = redis.call("GET", KEYS[1])
if cur == ARGV[1] then
	return 2
end
if cur then
	return cur
end
if redis.call("GET", KEYS[2]) then -- GET, not EXISTS: the ACL of a lock's user lists GET
	return 0
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
return 1
