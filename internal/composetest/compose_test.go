package composetest_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/locklab/locklab/internal/rig"
)

// root is the module root, seen from this package's directory.
var root = filepath.Join("..", "..")

func composePath(name string) string { return filepath.Join(root, "compose", name) }

// composeFile is the part of the Compose format the files use. Decoding is
// strict (KnownFields), so a misspelt key fails the test instead of being
// ignored as Docker would not ignore it. There is no top-level name:
// docker-compose v1 (Debian 12's) refuses it, so docker/compose.sh names
// the project (-p locklab-<stack>).
type composeFile struct {
	Services map[string]service `yaml:"services"`
	Networks map[string]network `yaml:"networks"`
	Extra    map[string]any     `yaml:",inline"` // only x-... extension fields
}

// network is a top-level network: bench-workers.yaml joins the Cluster
// stack's, made by another project (external).
type network struct {
	External bool   `yaml:"external"`
	Name     string `yaml:"name"`
}

type service struct {
	Image       string               `yaml:"image"`
	Command     []string             `yaml:"command"`
	Ports       []string             `yaml:"ports"`
	NetworkMode string               `yaml:"network_mode"`
	Volumes     []string             `yaml:"volumes"`
	User        string               `yaml:"user"`
	Restart     string               `yaml:"restart"`
	DependsOn   map[string]dependsOn `yaml:"depends_on"`
	Healthcheck struct {
		Test     []string `yaml:"test"`
		Interval string   `yaml:"interval"`
		Timeout  string   `yaml:"timeout"`
		Retries  int      `yaml:"retries"`
	} `yaml:"healthcheck"`
}

type dependsOn struct {
	Condition string `yaml:"condition"`
}

func load(t *testing.T, name string) composeFile {
	t.Helper()
	b, err := os.ReadFile(composePath(name))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f composeFile
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	for k := range f.Extra {
		if !strings.HasPrefix(k, "x-") {
			t.Errorf("%s: unknown top-level key %q (only services and x-... extensions; docker-compose v1 refuses name and version)", name, k)
		}
	}
	if len(f.Services) == 0 {
		t.Fatalf("%s: no services", name)
	}
	return f
}

// serviceNames returns the names of f's services in sorted order.
func serviceNames(f composeFile) []string {
	names := make([]string, 0, len(f.Services))
	for n := range f.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// imageRE is the image every service names: redis:7.x unless
// LOCKLAB_REDIS_IMAGE names another (docker/compose.sh sets it to the
// local build, locklab/redis:local, on a machine with no registry).
var imageRE = regexp.MustCompile(`^\$\{LOCKLAB_REDIS_IMAGE:-redis:7(\.\d+){0,2}(-[a-z0-9]+)?\}$`)

// checkImage fails the test unless image, of the service where names, is
// the one imageRE matches.
func checkImage(t *testing.T, where, image string) {
	t.Helper()
	if !imageRE.MatchString(image) {
		t.Errorf("%s: image %q; want ${LOCKLAB_REDIS_IMAGE:-redis:7.x}", where, image)
	}
}

// hostPort is one port a stack takes on the host, for the clash check.
type hostPort struct {
	file, service string
	port          int
}

// publishedPort parses a "127.0.0.1:HOST:6379" mapping. It fails the test
// for any other form: a mapping without a host IP publishes on every
// interface.
func publishedPort(t *testing.T, where, spec string) int {
	t.Helper()
	parts := strings.Split(spec, ":")
	if len(parts) != 3 || parts[0] != "127.0.0.1" {
		t.Errorf("%s: port %q; want \"127.0.0.1:<host port>:6379\" (loopback only)", where, spec)
		return 0
	}
	if parts[2] != "6379" {
		t.Errorf("%s: port %q maps container port %s; want 6379", where, spec, parts[2])
	}
	p, err := strconv.Atoi(parts[1])
	if err != nil {
		t.Errorf("%s: port %q: host port %q is not a number", where, spec, parts[1])
	}
	return p
}

var (
	portFlagRE = regexp.MustCompile(`--port\s+(\d+)`)
	bindFlagRE = regexp.MustCompile(`--bind\s+(\S+)`)
)

// flagPort returns the --port of a host-network service's command.
func flagPort(t *testing.T, where string, cmd []string) int {
	t.Helper()
	m := portFlagRE.FindStringSubmatch(strings.Join(cmd, " "))
	if m == nil {
		t.Errorf("%s: command %q has no --port; a host-network server needs its own port", where, cmd)
		return 0
	}
	p, _ := strconv.Atoi(m[1])
	return p
}

func checkPorts(t *testing.T, all []hostPort) {
	t.Helper()
	seen := map[int]hostPort{}
	for _, hp := range all {
		switch {
		case hp.port == 6379 || hp.port == 26379:
			t.Errorf("%s %s: host port %d is Redis's default; a system Redis may hold it", hp.file, hp.service, hp.port)
		case hp.port < 1024 || hp.port > 65535:
			t.Errorf("%s %s: host port %d out of range 1024..65535", hp.file, hp.service, hp.port)
		}
		if prev, ok := seen[hp.port]; ok {
			t.Errorf("host port %d used by %s %s and %s %s", hp.port, prev.file, prev.service, hp.file, hp.service)
		}
		seen[hp.port] = hp
	}
}

// redlockAddrs returns the Redlock nodes' addresses in service order, as
// users must list them.
func redlockAddrs(t *testing.T) []string {
	t.Helper()
	f := load(t, "redlock.yaml")
	var addrs []string
	for _, name := range serviceNames(f) {
		s := f.Services[name]
		if len(s.Ports) == 1 {
			addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(publishedPort(t, name, s.Ports[0])))
		}
	}
	return addrs
}

func TestRedlockComposeHasFiveIndependentLoopbackNodes(t *testing.T) {
	f := load(t, "redlock.yaml")
	if len(f.Services) != 5 {
		t.Fatalf("redlock.yaml has %d services; want 5 Redlock nodes", len(f.Services))
	}
	var ports []hostPort
	for _, name := range serviceNames(f) {
		s := f.Services[name]
		where := "redlock.yaml " + name
		checkImage(t, where, s.Image)
		if s.NetworkMode != "" {
			t.Errorf("%s: network_mode %q; want the default bridge with a published port", where, s.NetworkMode)
		}
		if len(s.Ports) != 1 {
			t.Errorf("%s: ports %q; want exactly one", where, s.Ports)
			continue
		}
		ports = append(ports, hostPort{"redlock.yaml", name, publishedPort(t, where, s.Ports[0])})
		cmd := strings.Join(s.Command, " ")
		if len(s.Command) == 0 || s.Command[0] != "redis-server" {
			t.Errorf("%s: command %q; want redis-server ...", where, s.Command)
		}
		// Clients come through Docker's port forwarding, not from the
		// container's loopback: a redis-server whose protected mode is on
		// (Debian's, in locklab/redis:local; the official image turns it
		// off) refuses them.
		if !strings.Contains(cmd, "--protected-mode no") {
			t.Errorf("%s: command %q; want --protected-mode no (the port is published on loopback only)", where, s.Command)
		}
		if strings.Contains(cmd, "replicaof") || strings.Contains(cmd, "slaveof") {
			t.Errorf("%s: command %q replicates; Redlock nodes must be independent primaries", where, s.Command)
		}
		if len(s.DependsOn) > 0 {
			t.Errorf("%s: depends_on %v; independent nodes depend on nothing", where, s.DependsOn)
		}
		if !slices.Contains(s.Healthcheck.Test, "ping") {
			t.Errorf("%s: healthcheck %q; want a redis-cli ping (make up waits on it)", where, s.Healthcheck.Test)
		}
	}
	checkPorts(t, ports)
}

func TestSentinelComposeMonitorsItsPrimary(t *testing.T) {
	f := load(t, "sentinel.yaml")
	var (
		primaries, replicas, sentinels []string
		ports                          []hostPort
		portOf                         = map[string]int{}
	)
	for _, name := range serviceNames(f) {
		s := f.Services[name]
		where := "sentinel.yaml " + name
		cmd := strings.Join(s.Command, " ")
		checkImage(t, where, s.Image)
		// Sentinel hands out the addresses it sees, so the group shares the
		// host's network, and each server binds loopback itself.
		if s.NetworkMode != "host" {
			t.Errorf("%s: network_mode %q; want host (see the file's header)", where, s.NetworkMode)
		}
		if len(s.Ports) > 0 {
			t.Errorf("%s: ports %q are ignored with network_mode host; bind with --bind/--port", where, s.Ports)
		}
		p := flagPort(t, where, s.Command)
		portOf[name] = p
		ports = append(ports, hostPort{"sentinel.yaml", name, p})
		if hc := strings.Join(s.Healthcheck.Test, " "); !strings.Contains(hc, "-p "+strconv.Itoa(p)+" ping") {
			t.Errorf("%s: healthcheck %q; want redis-cli -p %d ping", where, s.Healthcheck.Test, p)
		}
		switch {
		case strings.Contains(cmd, "redis-sentinel"):
			sentinels = append(sentinels, name)
			checkSentinelMount(t, where, s)
		case strings.Contains(cmd, "--replicaof"):
			replicas = append(replicas, name)
		default:
			primaries = append(primaries, name)
		}
		if !strings.Contains(cmd, "redis-sentinel") {
			if m := bindFlagRE.FindStringSubmatch(cmd); m == nil || m[1] != "127.0.0.1" {
				t.Errorf("%s: command %q; want --bind 127.0.0.1 (loopback only)", where, s.Command)
			}
		}
	}
	if len(primaries) != 1 || len(replicas) != 1 || len(sentinels) != 3 {
		t.Fatalf("sentinel.yaml: primaries %q, replicas %q, sentinels %q; want 1, 1, 3", primaries, replicas, sentinels)
	}
	checkPorts(t, ports)

	primaryPort := portOf[primaries[0]]
	replicaCmd := strings.Join(f.Services[replicas[0]].Command, " ")
	if want := "--replicaof 127.0.0.1 " + strconv.Itoa(primaryPort); !strings.Contains(replicaCmd, want) {
		t.Errorf("replica command %q; want it to contain %q", replicaCmd, want)
	}

	conf := parseSentinelConf(t)
	if conf.bind != "127.0.0.1" {
		t.Errorf("sentinel.conf: bind %q; want 127.0.0.1", conf.bind)
	}
	if conf.name != "locklab" || conf.host != "127.0.0.1" || conf.port != primaryPort {
		t.Errorf("sentinel.conf monitors %q at %s:%d; want \"locklab\" at 127.0.0.1:%d (the primary)",
			conf.name, conf.host, conf.port, primaryPort)
	}
	if n := len(sentinels); conf.quorum <= n/2 || conf.quorum > n {
		t.Errorf("sentinel.conf: quorum %d with %d sentinels; want a majority, at most %d", conf.quorum, n, n)
	}
	for _, k := range []string{"down-after-milliseconds", "failover-timeout"} {
		if conf.settings[k] == "" {
			t.Errorf("sentinel.conf: no %q for locklab; the Sentinel default makes a failover take 30s+", k)
		}
	}
}

// checkSentinelMount checks that a sentinel mounts sentinel.conf read-only
// and runs from a writable copy of it.
func checkSentinelMount(t *testing.T, where string, s service) {
	t.Helper()
	cmd := strings.Join(s.Command, " ")
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) != 3 || parts[0] != "./sentinel.conf" || parts[2] != "ro" {
			t.Errorf("%s: volume %q; want ./sentinel.conf:<path>:ro", where, v)
			continue
		}
		if _, err := os.Stat(composePath("sentinel.conf")); err != nil {
			t.Errorf("%s: mounts %s: %v", where, parts[0], err)
		}
		if !strings.Contains(cmd, "cp -n "+parts[1]+" ") {
			t.Errorf("%s: command %q; want it to copy %s (sentinel rewrites its config file)", where, s.Command, parts[1])
		}
		return
	}
	t.Errorf("%s: volumes %q; want ./sentinel.conf mounted", where, s.Volumes)
}

type sentinelConf struct {
	bind       string
	name, host string
	port       int
	quorum     int
	settings   map[string]string // "sentinel <setting> locklab <value>"
}

func parseSentinelConf(t *testing.T) sentinelConf {
	t.Helper()
	b, err := os.ReadFile(composePath("sentinel.conf"))
	if err != nil {
		t.Fatal(err)
	}
	c := sentinelConf{settings: map[string]string{}}
	monitors := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch {
		case f[0] == "bind" && len(f) == 2:
			c.bind = f[1]
		case f[0] == "port":
			t.Errorf("sentinel.conf: %q; each sentinel's port is given on its command line", line)
		case f[0] == "sentinel" && len(f) == 6 && f[1] == "monitor":
			monitors++
			c.name, c.host = f[2], f[3]
			c.port, _ = strconv.Atoi(f[4])
			c.quorum, _ = strconv.Atoi(f[5])
		case f[0] == "sentinel" && len(f) == 4:
			if f[2] != c.name {
				t.Errorf("sentinel.conf: %q names master %q; want %q (after the monitor line)", line, f[2], c.name)
			}
			c.settings[f[1]] = f[3]
		default:
			t.Errorf("sentinel.conf: unexpected line %q", line)
		}
	}
	if monitors != 1 {
		t.Errorf("sentinel.conf has %d \"sentinel monitor\" lines; want 1", monitors)
	}
	return c
}

func TestComposeStacksDoNotClash(t *testing.T) {
	// Both stacks may run at once: no host port may be used twice.
	var all []hostPort
	r := load(t, "redlock.yaml")
	for _, name := range serviceNames(r) {
		for _, p := range r.Services[name].Ports {
			all = append(all, hostPort{"redlock.yaml", name, publishedPort(t, name, p)})
		}
	}
	s := load(t, "sentinel.yaml")
	for _, name := range serviceNames(s) {
		all = append(all, hostPort{"sentinel.yaml", name, flagPort(t, name, s.Services[name].Command)})
	}
	checkPorts(t, all)

	// compose/ holds only non-Go files.
	entries, err := os.ReadDir(filepath.Join(root, "compose"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") {
			t.Errorf("compose/%s: compose/ holds no Go (tests live in internal/composetest)", e.Name())
		}
	}
}

var (
	envRE   = regexp.MustCompile("LOCKLAB_REDIS_ADDRS=([^\\s`]+)")
	addrsRE = regexp.MustCompile("-addrs\\s+([0-9][^\\s`]*)")
)

// serverAddrs returns the addresses of every Redis server (not sentinel) of
// both stacks.
func serverAddrs(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, a := range redlockAddrs(t) {
		out[a] = true
	}
	s := load(t, "sentinel.yaml")
	for _, name := range serviceNames(s) {
		if cmd := s.Services[name].Command; !strings.Contains(strings.Join(cmd, " "), "redis-sentinel") {
			out["127.0.0.1:"+strconv.Itoa(flagPort(t, name, cmd))] = true
		}
	}
	return out
}

func TestDocumentedAddressesAreTheComposePorts(t *testing.T) {
	redlock := redlockAddrs(t)
	want := strings.Join(redlock, ",")
	if len(redlock) != 5 {
		t.Fatalf("redlock.yaml addresses %q; want 5", want)
	}
	servers := serverAddrs(t)
	readme, err := os.ReadFile(composePath("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	header, err := os.ReadFile(composePath("redlock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{"compose/README.md": string(readme), "compose/redlock.yaml": string(header)}
	for doc, text := range docs {
		// Every list names Compose servers (never a sentinel), as bare
		// host:port pairs: the rig and the bench split on commas and do
		// not parse URLs.
		var lists []string
		for _, m := range envRE.FindAllStringSubmatch(text, -1) {
			lists = append(lists, m[1])
		}
		for _, m := range addrsRE.FindAllStringSubmatch(text, -1) {
			if m[1] != want {
				t.Errorf("%s: -addrs %s; want %s (the bench's 5-node locks need all five)", doc, m[1], want)
			}
			lists = append(lists, m[1])
		}
		for _, list := range lists {
			for _, a := range strings.Split(list, ",") {
				if !servers[a] {
					t.Errorf("%s: address %q in %q is not a Redis server of compose/ (host:port, no scheme)", doc, a, list)
				}
			}
		}
		if !slices.Contains(lists, want) {
			t.Errorf("%s: no LOCKLAB_REDIS_ADDRS=%s line; want the Redlock nodes listed in order", doc, want)
		}
	}
	if len(addrsRE.FindAllString(string(readme), -1)) == 0 {
		t.Error("compose/README.md shows no go run ./bench -addrs ... line")
	}

	// The bench still has the flag the README names.
	benchFiles, _ := filepath.Glob(filepath.Join(root, "bench", "*.go"))
	found := false
	for _, p := range benchFiles {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(`String("addrs",`)) {
			found = true
		}
	}
	if !found {
		t.Errorf("no -addrs flag defined in bench/*.go (%d files); compose/README.md documents one", len(benchFiles))
	}

	// The Makefile's up and down run docker/compose.sh on a stack, the
	// Redlock one unless STACK says otherwise, and the script reads
	// compose/<stack>.yaml.
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"STACK     ?= redlock", "docker/compose.sh up $(STACK)", "docker/compose.sh down $(STACK)"} {
		if !bytes.Contains(mk, []byte(want)) {
			t.Errorf("Makefile lacks %q: make up / make down must run docker/compose.sh on compose/redlock.yaml by default, as compose/README.md says", want)
		}
	}
	script, err := os.ReadFile(filepath.Join(root, "docker", "compose.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"file=compose/$stack.yaml", "project=locklab-$stack"} {
		if !bytes.Contains(script, []byte(want)) {
			t.Errorf("docker/compose.sh lacks %q; compose/README.md names the projects locklab-redlock and locklab-sentinel", want)
		}
	}
}

// TestRigReadsTheDocumentedAddresses hands the README's value to the rig as
// a user would, and checks that the rig picks the external provider and
// hands out exactly the Compose nodes, in order. Nothing is dialled: the
// rig does not connect to external servers when it lists them.
func TestRigReadsTheDocumentedAddresses(t *testing.T) {
	readme, err := os.ReadFile(composePath("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := redlockAddrs(t)
	var documented string
	for _, m := range envRE.FindAllStringSubmatch(string(readme), -1) {
		if m[1] == strings.Join(want, ",") {
			documented = m[1]
		}
	}
	if documented == "" {
		t.Fatal("compose/README.md shows no LOCKLAB_REDIS_ADDRS=... line for the Redlock nodes")
	}
	// The rig chooses its provider once per process; no other test in this
	// package uses the rig, so this one decides.
	t.Setenv("LOCKLAB_REDIS_ADDRS", documented)
	name, err := rig.ProviderName()
	if err != nil {
		t.Fatalf("rig.ProviderName() with LOCKLAB_REDIS_ADDRS=%s: %v", documented, err)
	}
	if !strings.Contains(name, "external") || rig.HasControl() {
		t.Fatalf("rig provider = %q, control %v; want external servers without process control", name, rig.HasControl())
	}
	nodes, err := rig.NewN(context.Background(), 5)
	if err != nil {
		t.Fatalf("rig.NewN(5) over the documented servers: %v", err)
	}
	var got []string
	for _, nd := range nodes {
		got = append(got, nd.Addr())
		_ = nd.Close() // closes nothing on external servers
	}
	if !slices.Equal(got, want) {
		t.Errorf("rig nodes = %q; want the Compose nodes %q", got, want)
	}
	if _, err := rig.NewN(context.Background(), 6); err == nil {
		t.Error("rig.NewN(6) over 5 documented servers = nil error; want one naming the count")
	}
}
