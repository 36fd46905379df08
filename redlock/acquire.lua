-- acquire.lua: one round of a waiting Lock on one node. It takes the lock
-- if the node is free and no better live waiter is queued, and otherwise
-- queues the waiter; on a node that the waiter held under its previous
-- token, it keeps the node (renamed to the new token) only if no better
-- live waiter is queued there, and hands it to that waiter otherwise.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the node's wait queue (see release.lua)
-- ARGV[1]  the waiter's token for this round:
--          "<notifier id>.<ttl ms>.<random>.<generation>"
-- ARGV[2]  the waiter's score: when it first wanted the lock, in
--          microseconds since the Unix epoch (the same in every round)
-- ARGV[3]  the waiter's TTL in milliseconds
-- ARGV[4]  the waiter's token from its previous round, retired now, or ""
--
-- Returns 1 when the key now holds ARGV[1], set with TTL ARGV[3] by this
--           script: the node was free, or held under ARGV[4], and no live
--           waiter ranks before ARGV[1] in the queue;
--         0 when ARGV[1] is queued: the key holds another token (perhaps
--           a better waiter's, handed to it by this script);
--         2 when the key already held ARGV[1] (a round that is retried);
--           its TTL was reset to ARGV[3].
--
-- A node goes to the best waiter in its queue, never the first to ask: the
-- lowest score, ties broken by token, the same order on every node. A free
-- node is therefore handed to the best live waiter by whoever finds it
-- free, and a waiter that holds only a few nodes (a split: nodes handed to
-- different waiters) gives each one up to a better waiter at its next
-- round. Dead waiters met on the way are dropped, as in release.lua,
-- which also describes the tokens and channels.
local cur = redis.call("GET", KEYS[1])
if cur == ARGV[1] then
	redis.call("PEXPIRE", KEYS[1], ARGV[3])
	return 2
end
local free = not cur
if ARGV[4] ~= "" then
	redis.call("ZREM", KEYS[2], ARGV[4])
	if cur == ARGV[4] then
		free = true
	end
end
redis.call("ZADD", KEYS[2], "NX", ARGV[2], ARGV[1])
-- Waiters that die leave their tokens behind; the queue outlives the last
-- live waiter by at most a TTL, as each waiter's rounds come every ttl/4.
redis.call("PEXPIRE", KEYS[2], ARGV[3])
if not free then
	return 0
end
while true do
	local nxt = redis.call("ZPOPMIN", KEYS[2])[1]
	if not nxt or nxt == ARGV[1] then
		redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[3])
		return 1
	end
	local id, ttl = string.match(nxt, "^([^.]+)%.(%d+)%.")
	if id and tonumber(ttl) > 0 then
		redis.call("SET", KEYS[1], nxt, "PX", ttl)
		if redis.call("PUBLISH", "redlock:w:" .. id, nxt) > 0 then
			return 0
		end
	end
end
