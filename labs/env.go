package labs

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/rig"
)

// Env is what a recipe gets to build a client's lock: where Redis is, the
// key under test, the scene's TTL and parameters, and the hook to wire into
// the lock's WithHook option.
type Env struct {
	Client string            `json:"client"`
	Addrs  []string          `json:"addrs"`
	Key    string            `json:"key"`
	TTL    time.Duration     `json:"ttl"`
	Params map[string]string `json:"params,omitempty"`
	// Spread makes the client's pools hand out their connections in turn
	// (see [Env.Redis]). The harness sets it for exercise runs.
	Spread bool `json:"spread,omitempty"`
	// SlowSubscribe delays the client's SUBSCRIBEs (see [SlowSubscribe]).
	SlowSubscribe bool `json:"slow_subscribe,omitempty"`
	// Defaults makes the client's pools go-redis's own defaults, as users
	// run it (see [GoRedisDefaults]).
	Defaults bool `json:"defaults,omitempty"`

	hook func(ctx context.Context, point string)

	mu     sync.Mutex // protects conns, users and defers
	conns  map[int]*redis.Client
	users  map[string]*redis.Client // by node and user, see RedisAs
	defers []func()
}

// ClientOption adjusts one client's environment.
type ClientOption func(*Env)

// Addrs points a client at these servers instead of the scene's nodes, for
// example at a promoted replica or a fault proxy.
func Addrs(addrs ...string) ClientOption { return func(e *Env) { e.Addrs = addrs } }

// GoRedisDefaults gives one client go-redis on its default options
// (rig.UserOptions), as users run it: a command whose reply is lost is
// sent again, up to 3 times. The harness's clients otherwise never retry,
// so that a lab sees every network error.
func GoRedisDefaults() ClientOption { return func(e *Env) { e.Defaults = true } }

// Param sets one parameter for one client (see [Env.Param]).
func Param(name, value string) ClientOption {
	return func(e *Env) { e.Params[name] = value }
}

// TTL gives one client a lock TTL other than the scene's: a short lease
// for the client whose lock must run out, a long one for the clients that
// must keep theirs however loaded the machine.
func TTL(ttl time.Duration) ClientOption { return func(e *Env) { e.TTL = ttl } }

// Redis returns the client's own connection pool to node i, made on first
// use and closed when the client stops.
func (e *Env) Redis(i int) *redis.Client {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conns == nil {
		e.conns = map[int]*redis.Client{}
	}
	if c, ok := e.conns[i]; ok {
		return c
	}
	if i < 0 || i >= len(e.Addrs) {
		panic(fmt.Sprintf("labs: Env.Redis(%d) but the scene has %d nodes", i, len(e.Addrs)))
	}
	opts := rig.ClientOptions(e.Addrs[i])
	if e.Defaults {
		opts = rig.UserOptions(e.Addrs[i])
	}
	c := e.newClient(opts)
	e.conns[i] = c
	return c
}

// newClient makes one of the client's pools, with the step controller's
// hook at every command and, in exercise runs, spread connections.
func (e *Env) newClient(opts *redis.Options) *redis.Client {
	opts.PoolFIFO = e.Spread
	c := redis.NewClient(opts)
	if e.Spread {
		spread(c)
	}
	c.AddHook(commandHook{e})
	if e.SlowSubscribe {
		c.AddHook(slowSubscribeHook{})
	}
	return c
}

// aclPassword is the password of the users RedisAs sets up.
const aclPassword = "locklab"

// RedisAs returns the client's own connection pool to node i as the ACL
// user named user, whom it first sets up on that node (with the client's
// own pool, as the default user): on, every key and channel, every
// command, then rules, such as "-@scripting" for a deployment that forbids
// Lua. It is made on first use and closed when the client stops.
func (e *Env) RedisAs(i int, user string, rules ...string) (*redis.Client, error) {
	admin := e.Redis(i)
	e.mu.Lock()
	defer e.mu.Unlock()
	id := fmt.Sprintf("%d/%s", i, user)
	if c, ok := e.users[id]; ok {
		return c, nil
	}
	// A password, because go-redis authenticates only when it has one.
	args := []any{"ACL", "SETUSER", user, "reset", "on", ">" + aclPassword, "~*", "&*", "+@all"}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := admin.Do(context.Background(), args...).Err(); err != nil {
		return nil, fmt.Errorf("labs: ACL SETUSER %s: %w", user, err)
	}
	opts := rig.ClientOptions(e.Addrs[i])
	opts.Username, opts.Password = user, aclPassword
	c := e.newClient(opts)
	if e.users == nil {
		e.users = map[string]*redis.Client{}
	}
	e.users[id] = c
	return c, nil
}

// spread opens three connections in c's pool before its first command.
// With PoolFIFO the pool then hands them out in turn, so commands sent one
// after the other go out on different connections (three in a row, such as
// WATCH, GET, MULTI/EXEC, on three), as they do in a busy service whose
// pool is shared by many goroutines. State that Redis keeps
// per connection (what WAIT counts, a WATCH, a MULTI) is then lost on the
// next command unless the code keeps one connection for it (Client.Conn,
// Client.Watch, TxPipelined). A failure to connect is left to the first
// command to report.
func spread(c *redis.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conns := []*redis.Conn{c.Conn(), c.Conn(), c.Conn()}
	for _, cn := range conns {
		_ = cn.Ping(ctx).Err()
	}
	for _, cn := range conns {
		_ = cn.Close()
	}
}

// Command returns the hook point just before the n-th Redis command (1 for
// the first) that a client sends within one operation, on the connections
// it got from [Env.Redis]: [Client.ParkAt](labs.Command(2)) stalls a
// client between its first and second command, wherever they are in the
// lock's code and whether or not the code calls a hook there. A pipeline
// or a MULTI/EXEC transaction counts as one command; go-redis's own
// connection set-up (HELLO, AUTH, SELECT) does not count. Operations run
// with [Scene.Local] count nothing.
func Command(n int) string { return fmt.Sprintf("redis#%d", n) }

// commandCounter counts the commands of one operation (see [Command]).
type commandCounter struct{ n atomic.Int32 }

type commandCounterKey struct{}

// countCommands returns ctx with a fresh command counter.
func countCommands(ctx context.Context) context.Context {
	return context.WithValue(ctx, commandCounterKey{}, &commandCounter{})
}

// setup are the commands go-redis sends on a new connection before the
// command that needed it.
var setup = map[string]bool{"hello": true, "auth": true, "client": true, "select": true, "readonly": true}

// commandHook is the go-redis hook of every client made by [Env.Redis]: it
// calls the step controller's hook at [Command] points.
type commandHook struct{ e *Env }

func (h commandHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h commandHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.before(ctx, cmd.Name())
		return next(ctx, cmd)
	}
}

func (h commandHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		name := "pipeline"
		for _, c := range cmds {
			if setup[c.Name()] {
				name = c.Name()
				break
			}
		}
		h.before(ctx, name)
		return next(ctx, cmds)
	}
}

func (h commandHook) before(ctx context.Context, name string) {
	if setup[name] {
		return
	}
	c, ok := ctx.Value(commandCounterKey{}).(*commandCounter)
	if !ok {
		return
	}
	h.e.Hook(ctx, Command(int(c.n.Add(1))))
}

// RedisAll returns the client's connection pools to every node, in order.
func (e *Env) RedisAll() []*redis.Client {
	out := make([]*redis.Client, len(e.Addrs))
	for i := range e.Addrs {
		out[i] = e.Redis(i)
	}
	return out
}

// Hook is the step controller's hook; pass it to a lock's WithHook option.
// It parks the client when the scenario armed point with [Client.ParkAt].
func (e *Env) Hook(ctx context.Context, point string) {
	if e.hook != nil {
		e.hook(ctx, point)
	}
}

// Param returns the scene parameter name, or def when it is not set.
func (e *Env) Param(name, def string) string {
	if v, ok := e.Params[name]; ok {
		return v
	}
	return def
}

// Defer registers fn to run when the client stops, before its Redis
// connections close (last registered, first run): a recipe that starts
// something with a lifetime (a Notifier, a subscription) stops it here.
func (e *Env) Defer(fn func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.defers = append(e.defers, fn)
}

func (e *Env) close() {
	e.mu.Lock()
	defers := e.defers
	e.defers = nil
	e.mu.Unlock()
	for i := len(defers) - 1; i >= 0; i-- {
		defers[i]()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.conns {
		_ = c.Close()
	}
	for _, c := range e.users {
		_ = c.Close()
	}
	e.conns, e.users = nil, nil
}
