-- release.lua: release the lock, but only if it still holds our token, and
-- hand it straight to the next live waiter in the queue if there is one.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the wait queue (a list of waiters' tokens, oldest first)
-- ARGV[1]  the token this holder wrote when it acquired the lock
-- ARGV[2]  the TTL in milliseconds to give the next holder
-- ARGV[3]  the prefix of waiters' channels ("correct:w:")
-- ARGV[4]  "1" to first remove ARGV[1] from the queue (a waiter that gives
--          up, and may have been handed the lock as it did), else "0"
--
-- Returns 1 when the key held ARGV[1] and was deleted (nobody waiting);
--         2 when the key held ARGV[1] and now holds the next waiter's token,
--           who has been told on its channel;
--         0 when the key is missing (it expired) or holds another token
--           (another holder's lock), and the key was not changed.
--
-- Everything runs as one script, and Redis runs a script to the end before
-- it serves any other command: the owner check, the DEL or the hand-off
-- cannot be split by another client (a GET then DEL from the client could
-- delete the next holder's lock). A waiter's token is "<notifier id>.<rand>"
-- and its channel is ARGV[3] .. "<notifier id>". PUBLISH returns how many
-- subscribers got the message: 0 means the waiter's process is gone (or its
-- connection is down), so the lock moves on to the one after it instead of
-- sitting with a dead waiter for a whole TTL.
if ARGV[4] == "1" then
	redis.call("LREM", KEYS[2], 0, ARGV[1])
end
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
while true do
	local nxt = redis.call("LPOP", KEYS[2])
	if not nxt then
		redis.call("DEL", KEYS[1])
		return 1
	end
	redis.call("SET", KEYS[1], nxt, "PX", ARGV[2])
	local id = string.match(nxt, "^([^.]+)%.")
	if id and redis.call("PUBLISH", ARGV[3] .. id, nxt) > 0 then
		return 2
	end
end
