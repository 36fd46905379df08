package main

import (
	"flag"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// summaryOut opens where the progress summary at the end of go test
// ./labs/... must go: wherever go test's own output goes (a terminal, a
// pipe to tee or less, a file, a terminal multiplexer's log), which is the
// go command's standard output. go test shows a passing package's output
// only with -v or -json, so the test cannot simply print it: on Linux it
// opens the go command's standard output (/proc/PPID/fd/1) for appending;
// elsewhere it falls back to the terminal (/dev/tty). It returns nil when
// go test shows the test's log anyway (-v, or -json as an IDE's test runner
// runs it: the summary is in the test's log there, and a line of plain
// text would break the JSON stream), or when there is nowhere to write.
//
// The returned pad is a line to write before the summary: when the go
// command's output is a file it does not append to (go test > log), the
// go command will write its own next line ("ok .../labs/learn") over the
// first bytes written after its own, so the summary starts past a blank
// line long enough to take it.
func summaryOut() (w io.WriteCloser, pad string) {
	if f := flag.Lookup("test.v"); f != nil && f.Value.String() != "false" {
		return nil, ""
	}
	if runtime.GOOS == "linux" {
		fd1 := "/proc/" + strconv.Itoa(os.Getppid()) + "/fd/1"
		if fi, err := os.Stat(fd1); err == nil {
			if f, err := os.OpenFile(fd1, os.O_WRONLY|os.O_APPEND, 0); err == nil {
				if fi.Mode().IsRegular() && !appends(os.Getppid()) {
					pad = strings.Repeat(" ", 120) + "\n"
				}
				return f, pad
			}
		}
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		return tty, ""
	}
	return nil, ""
}

// appends reports whether process pid's standard output was opened for
// appending (go test >> log), from /proc/PID/fdinfo/1.
func appends(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/1")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && flags&uint64(os.O_APPEND) != 0
		}
	}
	return false
}
