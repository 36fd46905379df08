package main

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// cmdCounts maps a command name as INFO commandstats spells it ("get",
// "evalsha", "client|setinfo") to a number of calls.
type cmdCounts map[string]int64

// parseCommandstats parses the text of INFO commandstats. Each command's
// count is calls plus rejected_calls (commands refused before running, such
// as a wrong number of arguments, still cost a round trip); failed_calls
// are already part of calls. Commands run inside Lua scripts are counted by
// Redis under their own names, so an EVALSHA of a release script shows as
// evalsha + get + del.
func parseCommandstats(info string) (cmdCounts, error) {
	out := cmdCounts{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, fields, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			return nil, fmt.Errorf("commandstats: unexpected line %q", line)
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		var n int64
		seenCalls := false
		for _, kv := range strings.Split(fields, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("commandstats: bad field %q in %q", kv, line)
			}
			if k != "calls" && k != "rejected_calls" {
				continue
			}
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("commandstats: bad %s in %q", k, line)
			}
			n += x
			seenCalls = seenCalls || k == "calls"
		}
		if !seenCalls {
			return nil, fmt.Errorf("commandstats: no calls= in %q", line)
		}
		out[name] = n
	}
	return out, sc.Err()
}

// adminCommands are excluded from the per-acquisition counts: connection
// handshakes (HELLO, CLIENT SETINFO, CLIENT TRACKING), keep-alive PINGs,
// rueidis's cluster probe, and the bench's own INFO, SCAN and cleanup
// commands. A command with a subcommand is matched by its first part
// ("client" covers "client|setinfo").
var adminCommands = map[string]bool{
	"info": true, "hello": true, "client": true, "ping": true, "auth": true,
	"select": true, "command": true, "config": true, "cluster": true,
	"readonly": true, "scan": true, "debug": true, "echo": true,
	"quit": true, "reset": true, "sentinel": true, "latency": true,
	"slowlog": true, "memory": true, "dbsize": true, "flushall": true,
	"flushdb": true,
}

// isAdmin reports whether the command is excluded as an admin command.
func isAdmin(name string) bool {
	base, _, _ := strings.Cut(name, "|")
	return adminCommands[base]
}

// delta returns after - before for every non-admin command, dropping
// zeros. A command that appears only in after counts in full.
func delta(before, after cmdCounts) cmdCounts {
	out := cmdCounts{}
	for name, a := range after {
		if isAdmin(name) {
			continue
		}
		if d := a - before[name]; d != 0 {
			out[name] = d
		}
	}
	return out
}

// add adds other into c.
func (c cmdCounts) add(other cmdCounts) {
	for k, v := range other {
		c[k] += v
	}
}

// total sums every count.
func (c cmdCounts) total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// subtract removes the bench's own commands (the violation counter's INCR
// and DECR) from the counts, which must contain them: a shortfall means
// the counts are not what they seem and is reported as an error.
func (c cmdCounts) subtract(own cmdCounts) error {
	for k, v := range own {
		if v == 0 {
			continue
		}
		if c[k] < v {
			return fmt.Errorf("commandstats: %s counted %d times, fewer than the bench's own %d", k, c[k], v)
		}
		c[k] -= v
		if c[k] == 0 {
			delete(c, k)
		}
	}
	return nil
}
