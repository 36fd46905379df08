-- acquire.lua: one round of a waiting Lock on one node. It takes the lock
-- if the node is free and no better live waiter is queued, and otherwise
-- queues the waiter; on a node that the waiter held under its previous
-- token, it keeps the node (renamed to the new token) only if no better
-- live waiter is queued there, and hands it to that waiter otherwise.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the node's wait queue (see release.lua)
-- KEYS[3]  ARGV[1]'s receipt, "<base>:r:<ARGV[1]>", left by a release of
--          ARGV[1] on this node (release.lua): a round that finds it lands
--          after its waiter retired or released the token, and changes
--          nothing (it returns 0)
-- ARGV[1]  the waiter's token for this round:
--          "<notifier id>.<ttl ms>.<random>.<generation>"
-- ARGV[2]  the waiter's score: when it first wanted the lock, in
--          microseconds since the Unix epoch (the same in every round)
-- ARGV[3]  the waiter's TTL in milliseconds
-- ARGV[4]  the waiter's token from its previous round, retired now, or ""
-- ARGV[5]  "1" when the waiter did not know this node held ARGV[4] (it was
--          handed over while this round was on its way): the node is then
--          kept, renamed, whoever else waits (the release chose the waiter
--          as the best queued there); "0" when the waiter knew (a split:
--          the node goes to a better waiter if one is queued)
-- ARGV[6]  "1" when the reply should say how many waiters are ahead
--          (one node of each round is asked; see below), "0" otherwise
-- ARGV[7...] tokens of the waiter's earlier rounds that failed on this
--          node, retired now too: a node held under any of them is taken
--          as held under ARGV[4]
--
-- Returns 1 when the key now holds ARGV[1], set with TTL ARGV[3] by this
--           script: the node was free, or held under ARGV[4], and no live
--           waiter ranks before ARGV[1] in the queue (or ARGV[5] is "1");
--         -r (0 or less) when ARGV[1] is queued, r waiters ahead of it (0
--           when ARGV[6] is "0": the count costs a ZRANK, and a round
--           needs it from one node only): the key holds another token
--           (perhaps a better waiter's, handed to it by this script). A
--           waiter far back looks less often;
--         2 when the key already held ARGV[1]: the script run twice (its
--           reply lost and the command sent again), or a round that is
--           retried; its TTL was reset to ARGV[3].
--
-- A node goes to the best waiter in its queue, never the first to ask: the
-- lowest score, ties broken by token, the same order on every node. A free
-- node is therefore handed to the best live waiter by whoever finds it
-- free, and a waiter that holds only a few nodes (a split: nodes handed to
-- different waiters) gives each one up to a better waiter at its next
-- round. Dead waiters met on the way are dropped, as in release.lua,
-- which also describes the tokens, channels and messages. ZADD NX adds a
-- token once however often the script runs.
local cur = redis.call("GET", KEYS[1])
if cur == ARGV[1] then
	redis.call("PEXPIRE", KEYS[1], ARGV[3])
	return 2
end
if redis.call("GET", KEYS[3]) then
	return 0 -- ARGV[1] was released here: a round that lands late takes nothing
end
local free = not cur
local keep = false
for i = 4, #ARGV do
	if (i == 4 or i > 6) and ARGV[i] ~= "" then
		redis.call("ZREM", KEYS[2], ARGV[i])
		if cur == ARGV[i] then
			free = true
			keep = i == 4 and ARGV[5] == "1"
		end
	end
end
if keep then
	redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[3])
	return 1
end
redis.call("ZADD", KEYS[2], "NX", ARGV[2], ARGV[1])
-- Waiters that die leave their tokens behind; the queue outlives the last
-- live waiter by at most a TTL, as each waiter's rounds come every ttl/4.
-- Never shorten it: a waiter with a short TTL must not cut the queue's
-- life below what a waiter with a long one needs between its rounds. GT
-- moves the expiry only later, in one call where the TTLs are alike; a
-- queue just made has no TTL, which GT takes as infinite, so NX sets one.
if redis.call("PEXPIRE", KEYS[2], ARGV[3], "GT") == 0 then
	redis.call("PEXPIRE", KEYS[2], ARGV[3], "NX")
end
local function ahead()
	if ARGV[6] ~= "1" then
		return 0
	end
	return -redis.call("ZRANK", KEYS[2], ARGV[1])
end
if not free then
	return ahead()
end
while true do
	local nxt = redis.call("ZPOPMIN", KEYS[2])[1]
	if not nxt or nxt == ARGV[1] then
		redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[3])
		return 1
	end
	local id, ttl = string.match(nxt, "^([^.]+)%.(%d+)%.")
	if id and tonumber(ttl) > 0 and redis.call("PUBLISH", "redlock:w:" .. id, nxt .. "\n" .. KEYS[1]) > 0 then
		redis.call("SET", KEYS[1], nxt, "PX", ttl)
		return ahead()
	end
end
