package registry

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// The kinds of go-redis client a lock on Redis runs on (bench -client).
const (
	// Plain: each contending client has its own *redis.Client, its own
	// connection pool, as a separate process would.
	Plain = "plain"
	// AutoPipe: the contending clients are goroutines of one process that
	// share one go-redis AutoPipeliner per server (client.AutoPipeline(),
	// the blocking face), which sends the commands they issue at the same
	// time as one pipeline. The lock runs as its Pipelined variant.
	AutoPipe = "autopipe"
)

// ClientKinds are the kinds of client, in the order runs and reports give
// them.
var ClientKinds = []string{Plain, AutoPipe}

// PipelinedSuffix ends the name of a lock's run on AutoPipeliners, as the
// contract suite names its kinds (correct@autopipe).
const PipelinedSuffix = "@" + AutoPipe

// ClientKind returns the kind of client the lock runs on: AutoPipe for a
// Pipelined lock, Plain otherwise.
func (im *Lock) ClientKind() string {
	if im.Pipelined {
		return AutoPipe
	}
	return Plain
}

// ParseClientKinds checks a -client list: each entry one of ClientKinds,
// none twice, at least one.
func ParseClientKinds(list []string) error {
	if len(list) == 0 {
		return fmt.Errorf("-client: empty; want %s", strings.Join(ClientKinds, ", "))
	}
	seen := map[string]bool{}
	for _, k := range list {
		if k != Plain && k != AutoPipe {
			return fmt.Errorf("-client: unknown client kind %q; want %s", k, strings.Join(ClientKinds, ", "))
		}
		if seen[k] {
			return fmt.Errorf("-client: %q given twice", k)
		}
		seen[k] = true
	}
	return nil
}

// OnPipeliners returns the lock's run on AutoPipeliners (its Pipelined
// variant), or nil when it has none: a lock on another system, or one
// whose NoPipeliner says why its API takes none.
func (im *Lock) OnPipeliners() *Lock {
	if im.Pipelined {
		return im
	}
	return Locks[im.Name+PipelinedSuffix]
}

// suffix is PipelinedSuffix for a Pipelined lock, "" otherwise.
func (im *Lock) suffix() string {
	if im.Pipelined {
		return PipelinedSuffix
	}
	return ""
}

// onPipeliners makes im's Pipelined variant: the same lock, the same
// traits, connected through Env.Pipeliners. The fault scoreboard runs it
// in its own schedule (the AutoPipeliner's lost batch), not as a row.
func (im *Lock) onPipeliners() *Lock {
	v := *im
	v.Name += PipelinedSuffix
	v.Pipelined = true
	v.NoFaults = "a run on the AutoPipeliner: the fault scoreboard's batch-lost schedule puts " + im.Name + " on one"
	connect := im.Connect
	v.Connect = func(e Env) (Contender, error) {
		if len(e.Pipeliners) < v.Nodes {
			return Contender{}, fmt.Errorf("%s needs %d AutoPipeliners (Env.Pipeliners), have %d", v.Name, v.Nodes, len(e.Pipeliners))
		}
		return connect(e)
	}
	return &v
}

// Pipeliners are the AutoPipeliners of one process on the first n lock
// servers (see OpenPipeliners).
type Pipeliners struct {
	// Env is the Env it was opened from with Pipeliners set.
	Env Env
	// Sent counts the commands the process handed to go-redis through
	// them (a batch counts each of its commands).
	Sent    *atomic.Int64
	clients []redis.UniversalClient
	aps     []*redis.AutoPipeliner
}

// OpenPipeliners opens, for each of the first n servers of e, one go-redis
// client (Client's options) and its AutoPipeliner, for the contending
// clients of one run to share: give them the returned Env. Close them
// after the contenders.
func (e Env) OpenPipeliners(n int) (*Pipeliners, error) {
	if len(e.Addrs) < n {
		return nil, fmt.Errorf("AutoPipeliners on %d servers, have %d", n, len(e.Addrs))
	}
	p := &Pipeliners{Sent: new(atomic.Int64)}
	for i := range n {
		c := e.Client(i, p.Sent)
		ap, err := c.AutoPipeline()
		if err != nil {
			_ = c.Close()
			_ = p.Close()
			return nil, fmt.Errorf("AutoPipeline on server %d: %w", i, err)
		}
		p.clients = append(p.clients, c)
		p.aps = append(p.aps, ap)
	}
	p.Env = e
	p.Env.Pipeliners = p.aps
	return p, nil
}

// Close closes the AutoPipeliners and their clients.
func (p *Pipeliners) Close() error {
	var errs []error
	for _, ap := range p.aps {
		errs = append(errs, ap.Close())
	}
	errs = append(errs, closeAll(p.clients))
	p.aps, p.clients = nil, nil
	return errors.Join(errs...)
}
