package registry

import (
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/locklab/locklab/internal/rig"
)

// UserClients makes the fault scoreboard's clients as users run them:
// go-redis and rueidis on their libraries' default options (go-redis
// retries a command up to 3 times on a network error, rueidis retries
// what it deems idempotent), with one change, the timeouts, scaled down
// with the scoreboard's short leases (users run 3 s read timeouts with
// leases of 10-30 s; here the leases are 1-15 s). Server 0 may be a
// Sentinel group's primary, reached the way users reach it: through the
// sentinels.
type UserClients struct {
	Timeout  time.Duration `json:"timeout"`
	Sentinel *Sentinel     `json:"sentinel,omitempty"` // server 0 is this group's primary
	// PGSettings are PostgreSQL settings every session of the locks on
	// PostgreSQL starts with (default_transaction_isolation), sent in the
	// startup message.
	PGSettings map[string]string `json:"pg_settings,omitempty"`
}

// Sentinel names a Sentinel group.
type Sentinel struct {
	Master string   `json:"master"`
	Addrs  []string `json:"addrs"`
}

// Client returns a go-redis Client for server i at addr.
func (u *UserClients) Client(i int, addr string) *redis.Client {
	if i == 0 && u.Sentinel != nil {
		return u.Sentinel.client(&redis.UniversalOptions{DialTimeout: u.Timeout, ReadTimeout: u.Timeout, WriteTimeout: u.Timeout})
	}
	o := rig.UserOptions(addr)
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = u.Timeout, u.Timeout, u.Timeout
	return redis.NewClient(o)
}

// Rueidis returns Rueidis's client options for server 0 at addr: its
// defaults, timeouts included (with its 300 ms connection timeout, as
// go-redis gets, rueidislock's Lock was seen to wait 10 s on a free key).
func (u *UserClients) Rueidis(addr string) rueidis.ClientOption {
	opt := rueidis.ClientOption{InitAddress: []string{addr}}
	if u.Sentinel != nil {
		u.Sentinel.rueidis(&opt)
	}
	return opt
}

// PGDSN returns the URL a PostgreSQL lock's client uses at addr, with the
// event's session settings (users.PGSettings), sent in the startup message.
func (u *UserClients) PGDSN(addr string) string {
	dsn := rig.PostgresDSN(addr)
	if u != nil {
		names := slices.Sorted(maps.Keys(u.PGSettings))
		for _, k := range names {
			dsn += "&" + url.PathEscape(k) + "=" + url.PathEscape(u.PGSettings[k])
		}
	}
	return dsn
}
