-- release.lua: release the lock on this node if it holds our token, and
-- hand it straight to the best live waiter in the node's queue, if any.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the node's wait queue: a sorted set of waiters' tokens, each
--          scored by the time its waiter first wanted the lock (ties by
--          token), so every node ranks the same waiters the same way
-- KEYS[3]  this release's receipt: "<base>:r:<ARGV[1]>"
-- ARGV[1]  the token this client wrote, or was handed
-- ARGV[2]  how long the receipt lives, in milliseconds: at least the
--          lock's TTL, as it also marks ARGV[1] released on this node
--          (take.lua and acquire.lua refuse a released token); "0" leaves
--          no receipt where nothing changed (the preflight's probe)
-- ARGV[3]  optional: "1" to also take ARGV[1] out of the queue (a waiter
--          that gives up, or a holder that may still be queued on this
--          node)
-- ARGV[4..] optional: tokens this client retired while waiting whose fate
--          on this node is unknown (a round timed out): each leaves the
--          queue, and is released like ARGV[1] if the key holds it
--
-- Returns 0 when the key is missing or holds another client's token: the
--           key is untouched, and so is the queue except for our tokens;
--         1 when the key held ARGV[1] and was deleted: no live waiter;
--         2 when the key held ARGV[1] and now holds the best live
--           waiter's token, with that waiter's TTL, and the waiter was told;
--         3 when the key held a token from ARGV[3..], released as above.
--
-- A waiter's token is "<notifier id>.<ttl ms>.<random>.<generation>"; its
-- Notifier listens on channel "redlock:w:<notifier id>", and the message is
-- "<token>\n<key>". PUBLISH returns how many subscribers got it: 0 means
-- the waiter's process is gone (or its subscription to this node is down),
-- so the node moves on to the next waiter at once instead of sitting with
-- a dead one for a TTL. PUBLISH comes before SET, so a dead waiter's token
-- never reaches the key.
--
-- The owner check always reads the key first. Run twice (a reply lost,
-- the command sent again), the second run finds the key no longer ours
-- (deleted, or the next waiter's) and changes nothing: it cannot pop a
-- second waiter, nor give the one it handed to another waiter's TTL; and
-- it answers as the first did, from the receipt the first left (KEYS[3]).
-- A run that finds nothing of ours leaves the receipt too ("0"): a SET or
-- a round of ARGV[1] still on its way (the client gave up on it, and it
-- lands now) then finds ARGV[1] released and takes nothing.
local cur = redis.call("GET", KEYS[1])
local code = "1" -- a string: see correct/release.lua
if #ARGV > 2 then
	-- A node holding our token never also queues it (a hand-off pops the
	-- waiter first), so only a node that does not can have it queued.
	if ARGV[3] == "1" and cur ~= ARGV[1] then
		redis.call("ZREM", KEYS[2], ARGV[1])
	end
	for i = 4, #ARGV do
		redis.call("ZREM", KEYS[2], ARGV[i])
		if cur == ARGV[i] then
			code = "3"
		end
	end
end
if cur ~= ARGV[1] and code ~= "3" then
	-- Nothing of ours here: the receipt says what an earlier run did, or,
	-- left now, that ARGV[1] is released on this node, so that a command
	-- taking it that lands later (take.lua, acquire.lua) refuses.
	local r = redis.call("GET", KEYS[3])
	if not r and ARGV[2] ~= "0" then
		redis.call("SET", KEYS[3], "0", "PX", ARGV[2])
	end
	return tonumber(r or 0)
end
while true do
	local nxt = redis.call("ZPOPMIN", KEYS[2])[1]
	if not nxt then
		redis.call("DEL", KEYS[1])
		break
	end
	local id, ttl = string.match(nxt, "^([^.]+)%.(%d+)%.")
	if id and tonumber(ttl) > 0 and redis.call("PUBLISH", "redlock:w:" .. id, nxt .. "\n" .. KEYS[1]) > 0 then
		redis.call("SET", KEYS[1], nxt, "PX", ttl)
		if code ~= "3" then
			code = "2"
		end
		break
	end
end
redis.call("SET", KEYS[3], code, "PX", ARGV[2])
return tonumber(code)
