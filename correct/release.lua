-- release.lua: release the lock, but only if it still holds our token, and
-- hand it straight to the next live waiter in the queue if there is one.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the wait queue (a list of waiters' tokens, oldest first)
-- ARGV[1]  the token this holder wrote when it acquired the lock
-- ARGV[2]  the prefix of waiters' channels ("correct:w:")
-- ARGV[3]  "1" to first remove ARGV[1] from the queue (a waiter that gives
--          up, and may have been handed the lock as it did), else "0"
-- ARGV[4]  "1" if the caller's lease has certainly not expired (it
--          releases before its Until), else "0"
--
-- Returns 1 when the key held ARGV[1] and was deleted (nobody waiting);
--         2 when the key held ARGV[1] and now holds the next waiter's token,
--           who has been told on its channel;
--         0 when the key is missing (it expired) or holds another token
--           (another holder's lock), and nothing was changed.
--
-- Everything runs as one script, and Redis runs a script to the end before
-- it serves any other command: the owner check and the DEL or hand-off
-- cannot be split by another client.
--
-- The owner check. A late release (ARGV[5] "0") reads the key first and
-- changes nothing unless it holds ARGV[1]. A release within the lease
-- (ARGV[5] "1") saves that read: the key cannot have expired, so it hands
-- over with SET ... GET, which returns the value it replaced, and checks
-- that instead. Should it not be ARGV[1] (someone outside the protocol
-- deleted or overwrote the key), the hand-off is undone at once.
--
-- A waiter's token is "<notifier id>.<ttl ms>.<rand>": the next holder
-- gets the TTL it counts its own lease with, whatever the releaser's, and
-- its channel is ARGV[2] .. "<notifier id>". PUBLISH returns how many
-- subscribers got the message: 0 means the waiter's process is gone (or
-- its connection is down), so the lock moves on to the one after it
-- instead of sitting with a dead waiter for a whole TTL. A token not in
-- that form is dropped.
if ARGV[3] == "1" and redis.call("LREM", KEYS[2], 0, ARGV[1]) > 0 then
	return 0 -- still queued, so never handed the lock
end
local checked = ARGV[4] ~= "1"
if checked and redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
while true do
	local nxt = redis.call("LPOP", KEYS[2])
	if not nxt then
		if not checked and redis.call("GET", KEYS[1]) ~= ARGV[1] then
			return 0
		end
		redis.call("DEL", KEYS[1])
		return 1
	end
	local id, ttl = string.match(nxt, "^([^.]+)%.(%d+)%.")
	if id then
		if checked then
			redis.call("SET", KEYS[1], nxt, "PX", ttl)
		else
			local old = redis.call("SET", KEYS[1], nxt, "PX", ttl, "GET")
			if old ~= ARGV[1] then -- not ours after all: undo
				if old then
					redis.call("SET", KEYS[1], old, "PX", ttl)
				else
					redis.call("DEL", KEYS[1])
				end
				redis.call("LPUSH", KEYS[2], nxt)
				return 0
			end
			checked = true
		end
		if redis.call("PUBLISH", ARGV[2] .. id, nxt) > 0 then
			return 2
		end
	end
end
