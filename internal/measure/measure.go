// Package measure holds the measurements the bench and the labs share:
// Redis commands per operation from INFO commandstats, and Jain's fairness
// index. One implementation, so a lab's small-scale figures and the
// bench's are counted the same way.
package measure

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Commands maps a command name as INFO commandstats spells it ("get",
// "evalsha", "client|setinfo") to a number of calls.
type Commands map[string]int64

// ParseCommandstats parses the text of INFO commandstats. Each command's
// count is calls plus rejected_calls (commands refused before running, such
// as a wrong number of arguments, still cost a round trip); failed_calls
// are already part of calls. Commands run inside Lua scripts are counted by
// Redis under their own names, so an EVALSHA of a release script shows as
// evalsha + get + del.
func ParseCommandstats(info string) (Commands, error) {
	out := Commands{}
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

// IsAdmin reports whether the command is excluded as an admin command.
func IsAdmin(name string) bool {
	base, _, _ := strings.Cut(name, "|")
	return adminCommands[base]
}

// Delta returns after - before for every non-admin command, dropping
// zeros. A command that appears only in after counts in full.
func Delta(before, after Commands) Commands {
	out := Commands{}
	for name, a := range after {
		if IsAdmin(name) {
			continue
		}
		if d := a - before[name]; d != 0 {
			out[name] = d
		}
	}
	return out
}

// Add adds other into c.
func (c Commands) Add(other Commands) {
	for k, v := range other {
		c[k] += v
	}
}

// Total sums every count.
func (c Commands) Total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// Subtract removes a caller's own commands (the bench's violation counter's INCR
// and DECR, say) from the counts, which must contain them: a shortfall means
// the counts are not what they seem and is reported as an error.
func (c Commands) Subtract(own Commands) error {
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

// Jain returns Jain's fairness index of xs: (Σx)² / (n·Σx²). It is 1 when
// every client got the same share and 1/n when one got everything; 0 when
// nobody got anything (or xs is empty).
func Jain(xs []int64) float64 {
	var sum, sq float64
	for _, x := range xs {
		f := float64(x)
		sum += f
		sq += f * f
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// Snapshot reads INFO commandstats from every client, in order.
func Snapshot(ctx context.Context, clients ...*redis.Client) ([]Commands, error) {
	out := make([]Commands, len(clients))
	for i, c := range clients {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return nil, fmt.Errorf("commandstats: %w", err)
		}
		if out[i], err = ParseCommandstats(info); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Since returns the commands run on all servers between two snapshots,
// admin commands excluded.
func Since(before, after []Commands) Commands {
	out := Commands{}
	for i := range after {
		out.Add(Delta(before[i], after[i]))
	}
	return out
}

// ParseCPU parses the text of INFO cpu and returns the CPU time the server
// process has used, system and user (used_cpu_sys + used_cpu_user, its
// threads included). The difference of two readings around a run, divided
// by the acquisitions, is the server's cost of one acquisition: what bounds
// a run that keeps the server busy, which the count of commands alone does
// not tell (an EVALSHA costs more than a SET, and a key written costs its
// later expiry).
func ParseCPU(info string) (time.Duration, error) {
	var total float64
	seen := 0
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || (k != "used_cpu_sys" && k != "used_cpu_user") {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x < 0 {
			return 0, fmt.Errorf("INFO cpu: bad %s %q", k, v)
		}
		total += x
		seen++
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if seen != 2 {
		return 0, fmt.Errorf("INFO cpu: want used_cpu_sys and used_cpu_user, found %d of them", seen)
	}
	return time.Duration(total * float64(time.Second)), nil
}
