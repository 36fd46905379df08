package rig

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// PgBouncerInstallHint is the message shown when no pgbouncer binary can be
// found.
const PgBouncerInstallHint = `no pgbouncer available to locklab: none at /usr/sbin/pgbouncer or on PATH
(LOCKLAB_PGBOUNCER can name the binary). Install it with "make deps"
(Debian/Ubuntu, as root: apt-get install -y pgbouncer; macOS: brew install pgbouncer).`

const (
	// defaultPgBouncerPoolSize is the server connections PgBouncer keeps
	// per database and user: its own default.
	defaultPgBouncerPoolSize = 20
	// pgBouncerMaxClients leaves room for a bench's clients.
	pgBouncerMaxClients = 1000
)

// PgBouncer pool modes: when PgBouncer hands a client's server connection
// back to its pool.
const (
	// PoolSession keeps a server connection for the client's whole
	// session.
	PoolSession = "session"
	// PoolTransaction gives the server connection back at the end of each
	// transaction (a statement outside one is its own transaction).
	PoolTransaction = "transaction"
	// PoolStatement gives it back after every statement, and refuses
	// transactions of more than one statement.
	PoolStatement = "statement"
)

// PgBouncerBin returns the pgbouncer binary: LOCKLAB_PGBOUNCER,
// /usr/sbin/pgbouncer (Debian's package), or pgbouncer on PATH. Its error
// carries [PgBouncerInstallHint].
func PgBouncerBin() (string, error) {
	if b := os.Getenv("LOCKLAB_PGBOUNCER"); b != "" {
		if _, err := os.Stat(b); err != nil {
			return "", fmt.Errorf("rig: LOCKLAB_PGBOUNCER=%s: %w", b, err)
		}
		return b, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("rig: %s", PgBouncerInstallHint)
}

// PgBouncer is one PgBouncer process in front of a rig-started
// [Postgres], on a free loopback port, with a directory of its own (its
// configuration, user list and log). Clients reach every database of the
// server through it, as the user "locklab" without a password (see
// [PgBouncer.DSN]). Its methods are safe for concurrent use.
//
// It runs as the postgres user when the tests run as root (PgBouncer
// refuses to run as root), is the rig's child (reaped when it exits) and
// carries "locklab-rig" as the first word of its process title, so
// [SystemStrays] and make strays find it if it outlives the tests.
type PgBouncer struct {
	dir  string
	port int
	mode string
	serverProcess
	closer
}

// PgBouncerOption configures a PgBouncer started by [NewPgBouncer] or
// [StartPgBouncer].
type PgBouncerOption func(*pgBouncerConfig)

type pgBouncerConfig struct {
	poolSize int
	settings []string
}

// WithPgBouncerPoolSize sets default_pool_size, how many server
// connections PgBouncer opens per database and user; clients beyond that
// wait in PgBouncer for one. If n < 1, the default is used. The default is
// 20, PgBouncer's own.
func WithPgBouncerPoolSize(n int) PgBouncerOption {
	return func(c *pgBouncerConfig) {
		if n >= 1 {
			c.poolSize = n
		}
	}
}

// WithPgBouncerSettings adds lines to the [pgbouncer] section of the
// configuration, each "name = value", for example
// "server_reset_query = ". The default is none beyond the rig's own.
func WithPgBouncerSettings(settings ...string) PgBouncerOption {
	return func(c *pgBouncerConfig) { c.settings = append(c.settings, settings...) }
}

// NewPgBouncer starts PgBouncer in front of pg in pool mode mode
// ([PoolSession], [PoolTransaction] or [PoolStatement]) and waits until a
// client can log in through it. The caller must Close it (before or after
// pg: it does not close pg).
func NewPgBouncer(ctx context.Context, pg *Postgres, mode string, opts ...PgBouncerOption) (*PgBouncer, error) {
	switch mode {
	case PoolSession, PoolTransaction, PoolStatement:
	default:
		return nil, fmt.Errorf("rig: PgBouncer pool mode %q: want session, transaction or statement", mode)
	}
	if pg == nil {
		return nil, fmt.Errorf("rig: NewPgBouncer: nil Postgres")
	}
	cfg := pgBouncerConfig{poolSize: defaultPgBouncerPoolSize}
	for _, o := range opts {
		o(&cfg)
	}
	for _, s := range cfg.settings {
		if !strings.Contains(s, "=") || strings.ContainsAny(s, "\n\r") {
			return nil, fmt.Errorf("rig: PgBouncer setting %q: want one line, name = value", s)
		}
	}
	bin, err := PgBouncerBin()
	if err != nil {
		return nil, err
	}
	uid, gid, err := PostgresServiceUser()
	if err != nil {
		return nil, err
	}
	return startRetried("Address already in use", func() (*PgBouncer, error) {
		return newPgBouncer(ctx, bin, pg, mode, cfg, uid, gid)
	})
}

func newPgBouncer(ctx context.Context, bin string, pg *Postgres, mode string, cfg pgBouncerConfig, uid, gid uint32) (*PgBouncer, error) {
	dir, err := os.MkdirTemp("", "locklab-pgbouncer-")
	if err != nil {
		return nil, fmt.Errorf("rig: %w", err)
	}
	fail := func(err error) (*PgBouncer, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return fail(err)
	}
	b := &PgBouncer{dir: dir, port: port, mode: mode}
	users := filepath.Join(dir, "users.txt")
	ini := filepath.Join(dir, "pgbouncer.ini")
	var conf strings.Builder
	fmt.Fprintf(&conf, "[databases]\n* = host=127.0.0.1 port=%d\n\n[pgbouncer]\n", pg.port)
	for _, l := range []string{
		"listen_addr = 127.0.0.1",
		"listen_port = " + strconv.Itoa(port),
		"unix_socket_dir =",
		"auth_type = trust",
		"auth_file = " + users,
		"admin_users = " + pgUser,
		"pool_mode = " + mode,
		"default_pool_size = " + strconv.Itoa(cfg.poolSize),
		"max_client_conn = " + strconv.Itoa(pgBouncerMaxClients),
		// pgx sends none of these by default; a DSN may.
		"ignore_startup_parameters = extra_float_digits",
		"logfile =",
		"pidfile =",
	} {
		conf.WriteString(l + "\n")
	}
	for _, s := range cfg.settings {
		conf.WriteString(s + "\n")
	}
	if err := os.WriteFile(users, []byte(`"`+pgUser+`" ""`+"\n"), 0o600); err != nil {
		return fail(fmt.Errorf("rig: %w", err))
	}
	if err := os.WriteFile(ini, []byte(conf.String()), 0o600); err != nil {
		return fail(fmt.Errorf("rig: %w", err))
	}
	for _, p := range []string{dir, users, ini} {
		if err := os.Chown(p, int(uid), int(gid)); err != nil {
			return fail(fmt.Errorf("rig: %w", err))
		}
	}
	b.d = &daemon{
		what:    "PgBouncer (" + b.Addr() + ", " + mode + " pooling)",
		path:    bin,
		argv0:   procMarker, // PgBouncer keeps argv as its title: "locklab-rig <ini>"
		args:    []string{ini},
		dir:     dir,
		logPath: filepath.Join(dir, "pgbouncer.log"),
		user:    &[2]uint32{uid, gid},
		stopSig: syscall.SIGINT, // safe shutdown: waits for clients to finish
	}
	if err := b.d.start(); err != nil {
		return fail(err)
	}
	if err := b.d.waitReady(ctx, pgReadyTimeout, func(ctx context.Context) error { return pgProbe(ctx, b.Addr()) }); err != nil {
		_ = b.d.kill()
		return fail(err)
	}
	return b, nil
}

// StartPgBouncer starts PgBouncer for a test, as [NewPgBouncer] does, and
// closes it in tb.Cleanup; when the test failed, the tail of its log is
// logged first. Without pgbouncer the test fails with
// [PgBouncerInstallHint].
func StartPgBouncer(tb testing.TB, pg *Postgres, mode string, opts ...PgBouncerOption) *PgBouncer {
	tb.Helper()
	return startForTest(tb, func() (*PgBouncer, error) { return NewPgBouncer(context.Background(), pg, mode, opts...) })
}

// Addr returns PgBouncer's address, "127.0.0.1:port".
func (b *PgBouncer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

// String returns the address and the pool mode.
func (b *PgBouncer) String() string { return b.Addr() + " (" + b.mode + ")" }

// Mode returns the pool mode.
func (b *PgBouncer) Mode() string { return b.mode }

// DSN returns a connection URL through PgBouncer, as [Postgres.DSN] does
// for the server.
func (b *PgBouncer) DSN() string { return PostgresDSN(b.Addr()) }

// Close kills PgBouncer, waits until it has been reaped and removes its
// directory. It is safe to call more than once.
func (b *PgBouncer) Close() error { return b.close(b.dir, b.d.kill) }

func (b *PgBouncer) logTails(lines int) string {
	return fmt.Sprintf("PgBouncer %s log, last lines:\n%s", b, b.LogTail(lines))
}
