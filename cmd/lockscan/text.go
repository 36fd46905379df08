package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// maxShown is how many bytes of a token or owner id the text report shows.
const maxShown = 48

// writeText prints r for a person: a summary line, the keys without a TTL,
// the TTL distribution, then every listed lock with its holder.
func writeText(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	ew.printf("lockscan %s, pattern %q: %d keys, %d without a TTL, %d reentrant",
		r.Target, r.Pattern, r.Keys, r.Leaked, r.Reentrant)
	if r.Excluded > 0 {
		ew.printf(", %d excluded (%s)", r.Excluded, strings.Join(r.Exclude, ","))
	}
	if r.Vanished > 0 {
		ew.printf(", %d gone while scanning", r.Vanished)
	}
	ew.printf("\n")

	if r.Leaked > 0 {
		ew.printf("\nLEAKED: keys without a TTL, possible leaked locks (nobody can acquire them until deleted)\n")
		tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "  KEY\tTYPE\tHOLDER\n")
		for _, l := range r.Locks {
			if l.Leaked {
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", l.Key, l.Type, holder(l))
			}
		}
		_ = tw.Flush()
	}

	ew.printf("\nTTL distribution\n")
	tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', tabwriter.AlignRight)
	for _, b := range r.TTL {
		fmt.Fprintf(tw, "  %s\t%d\t\n", b.Label, b.Count)
	}
	_ = tw.Flush()

	if len(r.Locks) > 0 {
		ew.printf("\nLocks\n")
		tw = tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "  KEY\tTYPE\tTTL\tHOLDER\n")
		for _, l := range r.Locks {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", l.Key, l.Type, ttlText(l.TTLMS), holder(l))
		}
		_ = tw.Flush()
		if r.Truncated {
			ew.printf("  ... %d more not listed (-limit)\n", r.Keys-len(r.Locks))
		}
	}
	ew.printf("\nServers\n")
	tw = tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  SERVER\tMAXMEMORY\tPOLICY\tEVICTS LOCK KEYS\n")
	for _, s := range r.Servers {
		if !s.Checked {
			fmt.Fprintf(tw, "  %s\t?\t?\tunknown: INFO memory refused (grant +info to see)\n", s.Addr)
			continue
		}
		evicts := "no"
		if s.Evicts {
			evicts = "YES: a held lock can vanish; set maxmemory-policy noeviction"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.Addr, maxmemoryText(s.Maxmemory), s.Policy, evicts)
	}
	_ = tw.Flush()
	switch {
	case r.Leaked > 0:
		ew.printf("\n%d possible leaked lock(s): exit status %d\n", r.Leaked, exitLeaks)
	case r.Evicting > 0:
		ew.printf("\n%d server(s) may evict lock keys: exit status %d\n", r.Evicting, exitEvicts)
	}
	return ew.err
}

func maxmemoryText(b int64) string {
	if b <= 0 {
		return "no limit"
	}
	return strconv.FormatInt(b, 10) + " bytes"
}

func ttlText(ms int64) string {
	if ms < 0 {
		return "none"
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

// holder describes who holds l: a string's token, a hash's owners and
// counts.
func holder(l Lock) string {
	switch {
	case l.Type == "string":
		t := shorten(l.Token)
		if l.TokenTruncated && !strings.HasSuffix(t, "...") {
			t += "..."
		}
		return "token " + strconv.Quote(t)
	case len(l.Owners) > 0:
		parts := make([]string, 0, len(l.Owners))
		for _, o := range l.Owners {
			if o.Value != "" {
				parts = append(parts, fmt.Sprintf("%s=%q", shorten(o.Owner), shorten(o.Value)))
			} else {
				parts = append(parts, fmt.Sprintf("owner %s count %d", shorten(o.Owner), o.Count))
			}
		}
		s := strings.Join(parts, ", ")
		if int64(len(l.Owners)) < l.OwnersTotal {
			s += fmt.Sprintf(" (+%d more)", l.OwnersTotal-int64(len(l.Owners)))
		}
		return s
	}
	return "-"
}

func shorten(s string) string {
	if len(s) <= maxShown {
		return s
	}
	return s[:maxShown] + "..."
}

// errWriter keeps the first write error, so the report is written without
// an error check per line.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }
