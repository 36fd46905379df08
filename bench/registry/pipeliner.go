package registry

import "github.com/redis/go-redis/v9"

// Redis returns what a lock's commands to server i go through: c, the
// client Connect made for it, or, when e.Pipeliners is set, the process's
// AutoPipeliner on that server, whose batches carry the commands of every
// client that shares it. A Connect that sends through Redis runs on an
// AutoPipeliner; one that cannot says why in its Lock's NoPipeliner.
func (e Env) Redis(i int, c redis.UniversalClient) redis.UniversalClient {
	if e.Pipeliners != nil {
		return e.Pipeliners[i]
	}
	return c
}
