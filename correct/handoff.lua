-- handoff.lua: the hand-off step, shared by release.lua, enqueue.lua and
-- queued.lua (scripts.go puts it in front of each of them).
--
-- handoff(key, queue, prefix, self) gives key to the oldest live waiter in
-- queue (a list of waiters' tokens, oldest first). A waiter's token is
-- "<notifier id>.<ttl ms>.<random>"; its Notifier listens on channel
-- prefix .. "<notifier id>". It pops tokens from the head of the queue:
--
--   - self (the caller's own token, when it is a waiter): stops and returns
--     self, leaving key alone: the caller is next and takes it;
--   - a token whose PUBLISH reaches a subscriber: SET key to it with its
--     own TTL, tell it (the message is "<token>\n<key>"), return it;
--   - a token nobody hears (its process is gone, or its subscription is
--     down): dropped, and on to the next, so that the lock never sits with
--     the dead for a whole TTL;
--   - a token not in that form: dropped.
--
-- It returns false, leaving key alone, when the queue ran out. PUBLISH
-- comes before SET: no subscriber can act on the message before the
-- script ends, and a dead waiter's token never reaches the key.
local function handoff(key, queue, prefix, self)
	while true do
		local nxt = redis.call("LPOP", queue)
		if not nxt then
			return false
		end
		if nxt == self then
			return self
		end
		local id, ttl = string.match(nxt, "^([^.]+)%.(%d+)%.")
		if id and redis.call("PUBLISH", prefix .. id, nxt .. "\n" .. key) > 0 then
			redis.call("SET", key, nxt, "PX", ttl)
			return nxt
		end
	end
end

-- keep(queue, ttl) makes sure queue lives at least ttl ms more, never less
-- than it had: each waiter keeps it alive, and when every waiter is gone
-- it expires. (PEXPIRE GT would not set a TTL on a list that has none.)
local function keep(queue, ttl)
	local left = redis.call("PTTL", queue)
	if left >= 0 and left < tonumber(ttl) or left == -1 then
		redis.call("PEXPIRE", queue, ttl)
	end
end
