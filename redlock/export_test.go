package redlock

import (
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/take"
)

// Exported for package redlock_test only.
var (
	Validity           = validity
	Drift              = drift
	DefaultNodeTimeout = defaultNodeTimeout
	QueueKey           = queueKey
	ChannelPrefix      = channelPrefix
	Scripts            = map[string]*redis.Script{"release": releaseScript, "extend": extendScript, "acquire": acquireScript, "take": take.Script}
	ScriptSources      = map[string]string{"release": releaseLua, "extend": extendLua, "acquire": acquireLua, "take": take.Src}
)
