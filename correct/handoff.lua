-- handoff.lua: the hand-off step, shared by release.lua, enqueue.lua and
-- queued.lua (scripts.go puts it in front of each of them), and a waiter's
-- claim on a lock it finds free or handed to it (enqueue.lua, queued.lua).
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
-- it expires. PEXPIRE GT moves a TTL that is shorter, in one call (the
-- usual case: each look finds the TTL run down since the last); it counts
-- a list with no TTL as never expiring and leaves it, so NX then sets one.
local function keep(queue, ttl)
	if redis.call("PEXPIRE", queue, ttl, "GT") == 0 then
		redis.call("PEXPIRE", queue, ttl, "NX")
	end
end

-- claim(key, queue, prefix, self, ttl, receipt) is a waiter's look at the
-- lock, the first step of enqueue.lua and queued.lua. self is the waiter's
-- token and receipt its receipt key. It returns 2 when key already holds
-- self (handed to it); 3 when self was released already (its waiter gave
-- up: release.lua left the receipt), so that a join or a look that lands
-- late takes nothing and queues nothing; 1 when key was free and no older
-- live waiter was queued (handoff stopped at self or ran out): key now
-- holds self with TTL ttl ms, and self has left queue; false when someone
-- else holds key (perhaps an older waiter, just handed it here).
local function claim(key, queue, prefix, self, ttl, receipt)
	local cur = redis.call("GET", key)
	if cur == self then
		return 2
	end
	if redis.call("GET", receipt) then
		redis.call("LREM", queue, 0, self)
		return 3
	end
	if not cur then
		local got = handoff(key, queue, prefix, self)
		if not got or got == self then
			redis.call("SET", key, self, "PX", ttl)
			redis.call("LREM", queue, 0, self)
			return 1
		end
	end
	return false
end
