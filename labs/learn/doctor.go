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
	"strconv"
	"strings"
	"time"
)

// A check is one thing doctor verifies. It returns what it found and, when
// something is wrong, the fix to print.
type check struct {
	name string
	run  func(root string) (found, fix string)
}

var checks = []check{
	{"Go", checkGo},
	{"redis-server", checkRedisServer},
	{"redis-sentinel", checkSentinel},
	{"a real server on a free port", checkServer},
	{"servers from LOCKLAB_REDIS_ADDRS", checkExternal},
	{"modules for an offline room", checkModules},
	{"a warm build of every lab", checkBuild},
}

// doctor runs every check, printing one line each and the fix for each
// that fails, and reports whether all passed.
func doctor(root string, w io.Writer) bool {
	fmt.Fprintf(w, "locklab doctor (%s/%s)\n", runtime.GOOS, runtime.GOARCH)
	failed := 0
	for _, c := range checks {
		found, fix := c.run(root)
		if fix == "" {
			fmt.Fprintf(w, "  ok   %-32s %s\n", c.name, found)
			continue
		}
		failed++
		fmt.Fprintf(w, "  FIX  %-32s %s\n", c.name, found)
		for _, l := range strings.Split(fix, "\n") {
			fmt.Fprintf(w, "         %s\n", l)
		}
	}
	if failed > 0 {
		fmt.Fprintf(w, "%d to fix; then run make doctor again.\n", failed)
		return false
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
		cmd.Stdout = io.Discard
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
		{"test", "-count=1", "-run", "^$", "./labs/..."},
		{"test", "-count=1", "-tags", "exercise", "-run", "^$", "./labs/..."},
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
