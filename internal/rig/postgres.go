package rig

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/proc"
)

// PostgresInstallHint is the message shown when no PostgreSQL server can be
// found.
const PostgresInstallHint = `no PostgreSQL server available to locklab: no postgres and initdb in /usr/lib/postgresql/*/bin,
in pg_config --bindir or on PATH (LOCKLAB_POSTGRES_BIN can name their directory).
Install it with "make deps" (Debian/Ubuntu, as root: apt-get install -y postgresql;
macOS: brew install postgresql@15, which is not put on PATH: then LOCKLAB_POSTGRES_BIN="$(brew --prefix postgresql@15)/bin").`

const (
	// pgUser is the superuser initdb creates, with trust authentication
	// on loopback: the rig's servers are for tests only.
	pgUser = "locklab"
	// pgDatabase is the database clients connect to.
	pgDatabase = "postgres"
	// pgServiceUser is who runs the server when the tests run as root:
	// PostgreSQL refuses to run as root.
	pgServiceUser = "postgres"
	// pgReadyTimeout bounds a start or restart (crash recovery after a
	// SIGKILL takes 1-2s).
	pgReadyTimeout = 60 * time.Second
	// pgStopTimeout bounds a fast shutdown.
	pgStopTimeout = 20 * time.Second
	// pgMaxConnections leaves room for a bench with dozens of clients, each
	// with a connection or two.
	pgMaxConnections = 300
)

// PostgresBin returns the directory holding the postgres and initdb
// binaries: LOCKLAB_POSTGRES_BIN, the newest /usr/lib/postgresql/*/bin
// (Debian, Ubuntu), pg_config --bindir, or the directory of postgres on
// PATH. Its error carries [PostgresInstallHint].
func PostgresBin() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"postgres", "initdb"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("LOCKLAB_POSTGRES_BIN"); d != "" {
		if !has(d) {
			return "", fmt.Errorf("rig: LOCKLAB_POSTGRES_BIN=%s has no postgres and initdb", d)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return pgMajor(b) - pgMajor(a) })
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	return "", errors.New(PostgresInstallHint)
}

// PostgresServiceUser returns who runs the rig's PostgreSQL servers: the
// tests' own user, or the postgres user when the tests run as root
// (PostgreSQL refuses to run as root). Its error says when that user is
// missing.
func PostgresServiceUser() (uid, gid uint32, err error) {
	uid, gid, err = proc.ServiceUser(pgServiceUser)
	if err != nil {
		return 0, 0, fmt.Errorf("rig: %w", err)
	}
	return uid, gid, nil
}

// pgMajor is the major version in a /usr/lib/postgresql/<major>/bin path.
func pgMajor(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// Postgres is one PostgreSQL server (a postmaster and its processes) on a
// free loopback port, with a data directory of its own. Its methods are
// safe for concurrent use.
//
// The server runs as the postgres user when the tests run as root, and as
// the tests' own user otherwise. The rig is the postmaster's parent and
// reaps it. Faults are real: [Postgres.Kill] (SIGKILL to every server
// process: a crash, followed by crash recovery on [Postgres.Restart]),
// [Postgres.Pause] (SIGSTOP to all of them: connections stay open and
// nothing answers, new connections included, until [Postgres.Resume]),
// and a faultproxy in front of
// [Postgres.Addr] for a client's partition. Its processes carry
// "locklab-rig" in their titles (cluster_name; see [SystemStrays]).
type Postgres struct {
	bin  string
	dir  string
	port int
	serverProcess
	closer
}

// PostgresOption configures a server started by [NewPostgres] or
// [StartPostgres].
type PostgresOption func(*pgConfig)

type pgConfig struct{ settings []string }

// WithPostgresSettings adds server settings, each "name=value" (passed as
// -c name=value), for example "idle_in_transaction_session_timeout=2s".
// The default is none beyond the rig's own (loopback, the port, 300
// connections).
func WithPostgresSettings(settings ...string) PostgresOption {
	return func(c *pgConfig) { c.settings = append(c.settings, settings...) }
}

// NewPostgres starts a server and waits until it accepts connections. The
// caller must Close it. The first start on a machine runs initdb (about 3s)
// into a template kept in the temporary directory
// (locklab-postgres-template-*); every server is a copy of it.
func NewPostgres(ctx context.Context, opts ...PostgresOption) (*Postgres, error) {
	var cfg pgConfig
	for _, o := range opts {
		o(&cfg)
	}
	for _, s := range cfg.settings {
		if !strings.Contains(s, "=") {
			return nil, fmt.Errorf("rig: PostgreSQL setting %q: want name=value", s)
		}
	}
	bin, err := PostgresBin()
	if err != nil {
		return nil, err
	}
	uid, gid, err := PostgresServiceUser()
	if err != nil {
		return nil, err
	}
	tmpl, err := pgTemplate(ctx, bin, uid, gid)
	if err != nil {
		return nil, err
	}
	return startRetried("Address already in use", func() (*Postgres, error) { return newPostgres(ctx, bin, tmpl, uid, gid, cfg) })
}

func newPostgres(ctx context.Context, bin, tmpl string, uid, gid uint32, cfg pgConfig) (*Postgres, error) {
	dir, err := os.MkdirTemp("", "locklab-postgres-")
	if err != nil {
		return nil, fmt.Errorf("rig: %w", err)
	}
	fail := func(err error) (*Postgres, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := os.Chown(dir, int(uid), int(gid)); err != nil {
		return fail(fmt.Errorf("rig: %w", err))
	}
	data := filepath.Join(dir, "data")
	if err := copyTree(tmpl, data, uid, gid); err != nil {
		return fail(fmt.Errorf("rig: copy the PostgreSQL template: %w", err))
	}
	port, err := freePort()
	if err != nil {
		return fail(err)
	}
	p := &Postgres{bin: bin, dir: dir, port: port}
	args := []string{
		"-D", data,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port=" + strconv.Itoa(port),
		"-c", "unix_socket_directories=" + dir,
		"-c", "cluster_name=" + procMarker, // in every server process's title
		"-c", "max_connections=" + strconv.Itoa(pgMaxConnections),
		"-c", "logging_collector=off",
		"-c", "log_line_prefix=%m [%p] ",
	}
	for _, s := range cfg.settings {
		args = append(args, "-c", s)
	}
	p.d = &daemon{
		what:    "PostgreSQL server (" + p.Addr() + ")",
		path:    filepath.Join(bin, "postgres"),
		args:    args,
		dir:     dir,
		logPath: filepath.Join(dir, "postgres.log"),
		user:    &[2]uint32{uid, gid},
		stopSig: syscall.SIGINT, // fast shutdown: roll back sessions, checkpoint, exit
	}
	if err := p.start(ctx); err != nil {
		_ = p.kill()
		return fail(err)
	}
	return p, nil
}

// StartPostgres starts a server for a test, as [NewPostgres] does, and
// closes it in tb.Cleanup. When the test fails, the tail of the server's
// log is logged. Without PostgreSQL the test fails with
// [PostgresInstallHint].
func StartPostgres(tb testing.TB, opts ...PostgresOption) *Postgres {
	tb.Helper()
	return startForTest(tb, func() (*Postgres, error) { return NewPostgres(context.Background(), opts...) })
}

func (p *Postgres) logTails(lines int) string {
	return fmt.Sprintf("PostgreSQL server %s log, last lines:\n%s", p.Addr(), p.LogTail(lines))
}

func (p *Postgres) start(ctx context.Context) error {
	if err := p.d.start(); err != nil {
		return err
	}
	return p.d.waitReady(ctx, pgReadyTimeout, func(ctx context.Context) error { return pgProbe(ctx, p.Addr()) })
}

// Addr returns the server's address, "127.0.0.1:port".
func (p *Postgres) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// String returns the address.
func (p *Postgres) String() string { return p.Addr() }

// DSN returns a connection URL for the server at addr (the server's own
// address, or a fault proxy's in front of it), as the superuser "locklab"
// (trust authentication) to the database "postgres", without TLS.
func (p *Postgres) DSN(addr string) string { return PostgresDSN(addr) }

// PostgresDSN returns the connection URL of a rig-started server reached at
// addr; see [Postgres.DSN].
func PostgresDSN(addr string) string {
	return "postgres://" + pgUser + "@" + addr + "/" + pgDatabase + "?sslmode=disable"
}

// Kill sends SIGKILL to every server process and waits until they have all
// exited: a crash. [Postgres.Restart] recovers from the WAL.
func (p *Postgres) Kill() error { return p.kill() }

// kill kills the process group and waits for the postmaster (reaped by
// the rig) and for its children (reaped by nobody we know) to be gone or
// dead. A restart before they are gone fails: they still hold the old
// shared memory ("pre-existing shared memory block is still in use").
// The children are not all in the postmaster's group: each one calls
// setsid, so kill sends them SIGKILL one by one too.
func (p *Postgres) kill() error {
	pgid := p.d.pid()
	children := procsWhere(func(_, ppid, _ int) bool { return pgid != 0 && ppid == pgid })
	if err := p.d.kill(); err != nil {
		return err
	}
	if pgid == 0 {
		return nil
	}
	for _, c := range children {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	alive := func() bool {
		return len(procsWhere(func(pid, _, pgrp int) bool { return pgrp == pgid || slices.Contains(children, pid) })) > 0
	}
	deadline := time.Now().Add(pgStopTimeout)
	for alive() {
		if time.Now().After(deadline) {
			return fmt.Errorf("rig: PostgreSQL processes of postmaster %d still alive %v after SIGKILL", pgid, pgStopTimeout)
		}
		time.Sleep(pollEvery)
	}
	return nil
}

// Stop shuts the server down (fast shutdown: sessions are rolled back)
// and waits until it has exited.
func (p *Postgres) Stop() error { return p.d.stop(pgStopTimeout) }

// Restart kills the server if it runs, starts it again on the same port
// and data (crash recovery if it was killed) and waits until it accepts
// connections.
func (p *Postgres) Restart(ctx context.Context) error {
	if err := p.kill(); err != nil {
		return err
	}
	return p.start(ctx)
}

// Version returns the server's version, from the postgres binary.
func (p *Postgres) Version() string {
	out, err := exec.Command(filepath.Join(p.bin, "postgres"), "--version").Output()
	if err != nil {
		return "unknown"
	}
	if f := strings.Fields(string(out)); len(f) >= 3 {
		return f[2] // "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
	}
	return "unknown"
}

// Close kills the server, waits for it and removes its directory. It is
// safe to call more than once.
func (p *Postgres) Close() error { return p.close(p.dir, p.kill) }

// procsWhere returns the processes that are alive (running, sleeping or
// stopped: anything but a zombie or gone) and match, from /proc.
func procsWhere(match func(pid, ppid, pgrp int) bool) []int {
	pids, _ := procFiles("stat", func(pid int, b []byte) bool {
		// pid (comm) state ppid pgrp ...; comm may hold spaces.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			return false
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			return false
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		return match(pid, ppid, pgrp)
	})
	return pids
}
