-- release.lua: release the lock on this node if it holds our token, and
-- hand it straight to the best live waiter in the node's queue, if any.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the node's wait queue: a sorted set of waiters' tokens, each
--          scored by the time its waiter first wanted the lock (ties by
--          token), so every node ranks the same waiters the same way
-- ARGV[1]  the token this client wrote, or was handed
-- ARGV[2]  optional: "1" to also take ARGV[1] out of the queue (a waiter
--          that gives up, or a holder that may still be queued on this
--          node); or "T": the caller knows this node holds ARGV[1] and its
--          validity has not ended, so the key cannot have expired (see
--          below)
-- ARGV[3..] optional: tokens this client retired while waiting whose fate
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
-- Notifier listens on channel "redlock:w:<notifier id>". PUBLISH returns
-- how many subscribers got the message: 0 means the waiter's process is
-- gone (or its subscription to this node is down), so the node moves on to
-- the next waiter at once instead of sitting with a dead one for a TTL.
-- Trusted ("T"): a hand-off needs no read of the key first. SET ... GET
-- hands over and returns the value it replaced, which must be ARGV[1]; a
-- mismatch (only possible if something outside the protocol deleted or
-- overwrote the key) is undone at once. With nobody to hand to, the
-- compare-and-delete below still reads the key.
if ARGV[2] == "T" then
	local first = true
	while true do
		local popped = redis.call("ZPOPMIN", KEYS[2])
		local nxt, score = popped[1], popped[2]
		if not nxt then
			if first and redis.call("GET", KEYS[1]) ~= ARGV[1] then
				return 0
			end
			redis.call("DEL", KEYS[1])
			return 1
		end
		local id, ttl = string.match(nxt, "^([^.]+)%.(%d+)%.")
		if id and tonumber(ttl) > 0 then
			if first then
				local old = redis.call("SET", KEYS[1], nxt, "PX", ttl, "GET")
				if old ~= ARGV[1] then -- not ours after all: undo
					if old then
						redis.call("SET", KEYS[1], old, "PX", ttl)
					else
						redis.call("DEL", KEYS[1])
					end
					redis.call("ZADD", KEYS[2], score, nxt)
					return 0
				end
				first = false
			else
				redis.call("SET", KEYS[1], nxt, "PX", ttl)
			end
			if redis.call("PUBLISH", "redlock:w:" .. id, nxt) > 0 then
				return 2
			end
		end
	end
end
local cur = redis.call("GET", KEYS[1])
local code = 1
if #ARGV > 1 then
	-- A node holding our token never also queues it (a hand-off pops the
	-- waiter first), so only a node that does not can have it queued.
	if ARGV[2] == "1" and cur ~= ARGV[1] then
		redis.call("ZREM", KEYS[2], ARGV[1])
	end
	for i = 3, #ARGV do
		redis.call("ZREM", KEYS[2], ARGV[i])
		if cur == ARGV[i] then
			code = 3
		end
	end
end
if cur ~= ARGV[1] and code ~= 3 then
	return 0
end
while true do
	local nxt = redis.call("ZPOPMIN", KEYS[2])[1]
	if not nxt then
		redis.call("DEL", KEYS[1])
		return code
	end
	local id, ttl = string.match(nxt, "^([^.]+)%.(%d+)%.")
	if id and tonumber(ttl) > 0 then
		redis.call("SET", KEYS[1], nxt, "PX", ttl)
		if redis.call("PUBLISH", "redlock:w:" .. id, nxt) > 0 then
			if code == 3 then
				return 3
			end
			return 2
		end
	end
end
