-- release.lua: release the lock if it still holds our token: hand it to
-- the oldest live waiter in the queue, or delete it when nobody waits.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the wait queue (see handoff.lua)
-- KEYS[3]  this release's receipt: "<base>:r:<ARGV[1]>" (see below)
-- ARGV[1]  the token this holder wrote, or was handed
-- ARGV[2]  the prefix of waiters' channels ("correct:w:")
-- ARGV[3]  "1" when a waiter gives up: first take ARGV[1] out of the
--          queue (it may also have been handed the lock as it gave up)
-- ARGV[4]  how long the receipt lives, in milliseconds; "0" for none
--
-- Returns 1 when the key held ARGV[1] and was deleted (nobody waiting);
--         2 when the key held ARGV[1] and now holds the next waiter's
--           token, and that waiter has been told;
--         0 when the key is missing or holds another token (it expired,
--           another holder has it), and nothing was changed but the
--           receipt; also for a waiter that gave up while still queued.
--
-- Run twice: a reply can be lost and the client send the command again.
-- The second run must neither release anything more (the key now holds the
-- next waiter's token, or nothing) nor answer differently. So every
-- release leaves a receipt, KEYS[3], for ARGV[4] ms: the code, when it
-- changed the key; "0" when the key was not ours, or the waiter was still
-- queued. A run that finds the key not ours answers from the receipt if
-- there is one. The receipt also marks ARGV[1] released: a command taking
-- it that lands later (take.lua, or a waiter's enqueue.lua or queued.lua,
-- held up in the network after their caller gave up) takes nothing. The
-- preflight probe passes ARGV[4] = "0" and leaves no receipt. The owner
-- check comes first, always: the key is read before anything is written.
local queued = ARGV[3] == "1" and redis.call("LREM", KEYS[2], 0, ARGV[1]) > 0
if queued or redis.call("GET", KEYS[1]) ~= ARGV[1] then
	-- Still queued, so never handed the lock; or nothing of ours here.
	local r = redis.call("GET", KEYS[3])
	if not r and ARGV[4] ~= "0" then
		redis.call("SET", KEYS[3], "0", "PX", ARGV[4])
	end
	return tonumber(r or 0)
end
-- The code is a string until the end: Redis turns a Lua number passed to
-- redis.call into a string itself, which is slower.
local code = "1"
if handoff(KEYS[1], KEYS[2], ARGV[2], false) then
	code = "2"
else
	redis.call("DEL", KEYS[1])
end
redis.call("SET", KEYS[3], code, "PX", ARGV[4])
return tonumber(code)
