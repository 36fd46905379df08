package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/internal/rig"
)

// A check is one thing doctor verifies. It returns what it found and, when
// something is wrong, the fix to print.
type check struct {
	name string
	// needs names the only labs that need what the check looks for (its
	// servers): when it fails, doctor warns, and every other lab runs.
	// Empty: every lab needs it, and a failure is one to fix.
	needs string
	run   func(root string) (found, fix string)
}

var checks = []check{
	{"Go", "", checkGo},
	{"redis-server", "", checkRedisServer},
	{"redis-sentinel", "", checkSentinel},
	{"a real server on a free port", "", checkServer},
	{"servers from LOCKLAB_REDIS_ADDRS", "", checkExternal},
	{"etcd", "lab 13", checkEtcd},
	{"ZooKeeper (java and its jars)", "lab 13", checkZooKeeper},
	{"PostgreSQL", "lab 14", checkPostgres},
	{"modules for an offline room", "", checkModules},
	{"a warm build of every lab", "", checkBuild},
}

// doctor runs every check, printing one line each and the fix for each
// that fails, and reports whether every lab can run but those that a
// warning names.
func doctor(root string, w io.Writer, checks []check) bool {
	fmt.Fprintf(w, "locklab doctor (%s/%s)\n", runtime.GOOS, runtime.GOARCH)
	failed := 0
	var warned []string // the labs the warnings name, in order, once each
	for _, c := range checks {
		found, fix := c.run(root)
		if fix == "" {
			fmt.Fprintf(w, "  ok   %-32s %s\n", c.name, found)
			continue
		}
		mark := "FIX "
		if c.needs != "" {
			mark = "WARN"
			if !slices.Contains(warned, c.needs) {
				warned = append(warned, c.needs)
			}
			fix += "\nOnly " + c.needs + " needs it: the other labs run without it."
		} else {
			failed++
		}
		fmt.Fprintf(w, "  %s %-32s %s\n", mark, c.name, found)
		for _, l := range strings.Split(fix, "\n") {
			fmt.Fprintf(w, "         %s\n", l)
		}
	}
	if failed > 0 {
		fmt.Fprintf(w, "%d to fix; then run make doctor again.\n", failed)
		return false
	}
	if len(warned) > 0 {
		fmt.Fprintf(w, "Ready, but for %s (see WARN above): make lab LAB=00 shows the first lab; make progress shows where you are.\n", strings.Join(warned, " and "))
		return true
	}
	fmt.Fprintln(w, "Ready: make lab LAB=00 shows the first lab; make progress shows where you are.")
	return true
}

var goDirective = regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`)

func checkGo(root string) (string, string) {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return err.Error(), "run make doctor from the repository"
	}
	m := goDirective.FindSubmatch(mod)
	if m == nil {
		return "go.mod has no go directive", "restore go.mod from the repository"
	}
	wantMajor, _ := strconv.Atoi(string(m[1]))
	wantMinor, _ := strconv.Atoi(string(m[2]))
	have := runtime.Version()
	var major, minor int
	if _, err := fmt.Sscanf(have, "go%d.%d", &major, &minor); err != nil {
		return have + " (a development build)", ""
	}
	if major < wantMajor || major == wantMajor && minor < wantMinor {
		return fmt.Sprintf("%s; go.mod wants go%d.%d or later", have, wantMajor, wantMinor),
			"install a newer Go from https://go.dev/dl/ (or your package manager), then check `go version`"
	}
	return fmt.Sprintf("%s (go.mod wants go%d.%d or later)", have, wantMajor, wantMinor), ""
}

const redisFix = "Debian/Ubuntu: sudo apt-get install -y redis-server redis-sentinel (make deps does it as root)\nmacOS: brew install redis\nthen open a new shell so that both are on PATH"

var redisVersion = regexp.MustCompile(`v=(\d+)\.(\d+)\.(\d+)`)

func checkRedisServer(string) (string, string) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return "not on PATH", redisFix
	}
	out, err := exec.Command(path, "--version").Output()
	m := redisVersion.FindSubmatch(out)
	if err != nil || m == nil {
		return fmt.Sprintf("%s --version: %v %q", path, err, strings.TrimSpace(string(out))), redisFix
	}
	if major, _ := strconv.Atoi(string(m[1])); major < 7 {
		return fmt.Sprintf("%s is version %s.%s; the labs need Redis 7", path, m[1], m[2]), redisFix
	}
	return fmt.Sprintf("%s.%s.%s (%s)", m[1], m[2], m[3], path), ""
}

func checkSentinel(string) (string, string) {
	path, err := exec.LookPath("redis-sentinel")
	if err != nil {
		return "not on PATH (lab 07's Sentinel variant and the rig's tests need it)", redisFix
	}
	return path, ""
}

// checkServer starts redis-server on a free loopback port, as the labs
// do, and PINGs it.
func checkServer(string) (string, string) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return "no redis-server to start", redisFix
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "cannot listen on 127.0.0.1: " + err.Error(), "the labs need loopback TCP: check the firewall or sandbox that blocks it"
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no")
	if err := cmd.Start(); err != nil {
		return "cannot start redis-server: " + err.Error(), redisFix
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(5 * time.Second)
	for {
		reply, err := ping(addr)
		if err == nil && reply == "+PONG" {
			return fmt.Sprintf("started one on %s, PING answered, stopped it", addr), ""
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("redis-server on %s did not answer PING within 5s: %v", addr, err),
				"run it by hand to see why: redis-server --port " + strconv.Itoa(port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ping sends PING in RESP and returns the reply line.
func ping(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, "*1\r\n$4\r\nPING\r\n"); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// versionTimeout bounds a server binary's --version (a JVM's start, for
// ZooKeeper).
const versionTimeout = 30 * time.Second

// version runs a binary to print its version and returns the first line
// of its output.
func version(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		if l := firstLine(out); l != "" {
			err = fmt.Errorf("%w: %s", err, l)
		}
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return firstLine(out), nil
}

// hinted is err's message, followed by the rig's install hint unless it
// already says it.
func hinted(err error, hint string) string {
	if strings.Contains(err.Error(), hint) {
		return err.Error()
	}
	return err.Error() + "\n" + hint
}

// checkEtcd looks for the etcd server binary where the rig does
// (rig.EtcdBinary), and runs it.
func checkEtcd(string) (string, string) {
	bin, err := rig.EtcdBinary()
	if err != nil {
		return "not found", hinted(err, rig.EtcdInstallHint)
	}
	v, err := version(bin, "--version")
	if err != nil {
		return bin + " does not run: " + err.Error(), "LOCKLAB_ETCD must name the etcd server binary; unset it to use etcd on PATH\n" + rig.EtcdInstallHint
	}
	return fmt.Sprintf("%s (%s)", v, bin), ""
}

// checkZooKeeper looks for java and ZooKeeper's jars where the rig does
// (rig.ZooKeeperCommand), and asks the jars for their version.
func checkZooKeeper(string) (string, string) {
	java, cp, err := rig.ZooKeeperCommand()
	if err != nil {
		return "not found", hinted(err, rig.ZooKeeperInstallHint)
	}
	v, err := version(java, "-cp", cp, "org.apache.zookeeper.version.VersionInfoMain")
	if err != nil {
		return "java cannot run ZooKeeper from its classpath: " + err.Error(), "LOCKLAB_JAVA must name java, LOCKLAB_ZOOKEEPER_CLASSPATH ZooKeeper's jars (a directory of jars as dir/*)\n" + rig.ZooKeeperInstallHint
	}
	return fmt.Sprintf("%s (%s, -cp %s)", v, java, cp), ""
}

// checkPostgres looks for postgres and initdb where the rig does
// (rig.PostgresBin), runs postgres, and, as root, looks for the user the
// rig runs the server as.
func checkPostgres(string) (string, string) {
	dir, err := rig.PostgresBin()
	if err != nil {
		return "not found", hinted(err, rig.PostgresInstallHint)
	}
	v, err := version(filepath.Join(dir, "postgres"), "--version")
	if err != nil {
		return dir + "/postgres does not run: " + err.Error(), rig.PostgresInstallHint
	}
	if _, _, err := rig.PostgresServiceUser(); err != nil {
		return v + ", but " + err.Error(), "PostgreSQL refuses to run as root: create the postgres user (Debian's postgresql package does: apt-get install -y postgresql), or run the labs as another user"
	}
	return fmt.Sprintf("%s (%s)", v, dir), ""
}

func checkExternal(string) (string, string) {
	if v := strings.TrimSpace(os.Getenv("LOCKLAB_REDIS_ADDRS")); v != "" {
		return "set (" + v + "): the labs that kill, pause or promote servers will skip; unset it to run them all", ""
	}
	return "not set: the labs start their own servers", ""
}

// checkModules makes sure every module the labs need is in the module
// cache, so that a room with no network can still build them.
func checkModules(root string) (string, string) {
	offline := func() error {
		cmd := exec.Command("go", "list", "-deps", "-test", "./...")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, firstLine(out))
		}
		return nil
	}
	if offline() == nil {
		return "every module is in the cache: the labs build with no network", ""
	}
	dl := exec.Command("go", "mod", "download")
	dl.Dir = root
	if out, err := dl.CombinedOutput(); err != nil {
		return "modules missing and go mod download failed: " + firstLine(out),
			"connect to the network (or set GOPROXY to your proxy) and run: go mod download"
	}
	if err := offline(); err != nil {
		return "still missing after go mod download: " + err.Error(), "run: go mod download all"
	}
	return "downloaded the missing modules: the labs now build with no network", ""
}

// checkBuild compiles every lab's tests, as go test and make exercise
// build them, and cmd/lockscan, which lab 11 runs, so that the first run
// in the room does not wait for the compiler.
func checkBuild(root string) (string, string) {
	start := time.Now()
	for _, args := range [][]string{
		// No -count=1: a second doctor finds the results cached and
		// links nothing again.
		{"test", "-run", "^$", "./labs/..."},
		{"test", "-tags", "exercise", "-run", "^$", "./labs/..."},
		{"build", "-o", os.DevNull, "./cmd/lockscan"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Sprintf("go %s: %v", strings.Join(args, " "), errors.Join(err, errors.New(firstLine(out)))),
				"run it by hand to see the error: go " + strings.Join(args, " ")
		}
	}
	return fmt.Sprintf("compiled in %.0fs (go test ./labs/..., with -tags exercise, and cmd/lockscan)", time.Since(start).Seconds()), ""
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
