package faultproxy

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
)

// errProtocol is returned for bytes that are not RESP. The proxy then stops
// looking at the connection's commands and forwards its bytes as they come.
var errProtocol = errors.New("faultproxy: not RESP")

// maxFrame bounds one command or reply the proxy will buffer while it looks
// for the frame's end; a longer one is forwarded without being parsed.
const maxFrame = 64 << 20

// command is one request as the client sent it: its name (upper case) and
// arguments. A frame is its raw bytes.
type command struct {
	name string
	args [][]byte
}

// parseCommand returns the first complete command in buf and its length.
// ok is false when buf holds only part of one. Redis accepts two forms: an
// array of bulk strings (what client libraries send) and an inline command,
// a line of words (what a person types into telnet).
func parseCommand(buf []byte) (cmd command, n int, ok bool, err error) {
	if len(buf) == 0 {
		return command{}, 0, false, nil
	}
	if buf[0] != '*' {
		if !inlineStart(buf[0]) {
			// Not RESP at all (ZooKeeper, PostgreSQL and etcd's gRPC
			// frames start with a binary length): the link passes bytes
			// through as they come instead of waiting for a newline.
			return command{}, 0, false, errProtocol
		}
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return command{}, 0, false, tooLong(len(buf))
		}
		words := strings.Fields(string(buf[:i]))
		if len(words) > 0 {
			cmd.name = strings.ToUpper(words[0])
			for _, w := range words[1:] {
				cmd.args = append(cmd.args, []byte(w))
			}
		}
		return cmd, i + 1, true, nil
	}
	count, pos, ok, err := header(buf, 0)
	if !ok || err != nil {
		return command{}, 0, ok, err
	}
	for k := 0; k < count; k++ {
		if pos >= len(buf) {
			return command{}, 0, false, tooLong(len(buf))
		}
		if buf[pos] != '$' {
			return command{}, 0, false, errProtocol
		}
		size, start, ok, err := header(buf, pos)
		if !ok || err != nil {
			return command{}, 0, ok, err
		}
		end := start + size + 2
		if size < 0 || end > len(buf) {
			if size < 0 {
				return command{}, 0, false, errProtocol
			}
			return command{}, 0, false, tooLong(end)
		}
		arg := buf[start : start+size]
		if k == 0 {
			cmd.name = strings.ToUpper(string(arg))
		} else {
			cmd.args = append(cmd.args, arg)
		}
		pos = end
	}
	return cmd, pos, true, nil
}

// header reads the "<type><number>\r\n" line at buf[pos:] and returns the
// number and where the line ends.
func header(buf []byte, pos int) (num, next int, ok bool, err error) {
	i := bytes.IndexByte(buf[pos:], '\n')
	if i < 0 {
		return 0, 0, false, tooLong(len(buf))
	}
	line := buf[pos+1 : pos+i]
	line = bytes.TrimSuffix(line, []byte("\r"))
	num, err = strconv.Atoi(string(line))
	if err != nil {
		return 0, 0, false, errProtocol
	}
	return num, pos + i + 1, true, nil
}

// inlineStart reports whether b can begin an inline command (text typed
// into a connection, as redis-cli or telnet send it): printable ASCII or
// white space, never a control byte.
func inlineStart(b byte) bool {
	return b >= 0x20 && b < 0x7f || b == '\t' || b == '\r' || b == '\n'
}

func tooLong(n int) error {
	if n > maxFrame {
		return errProtocol
	}
	return nil
}

// replyKind tells the proxy how a reply frame counts.
type replyKind int

const (
	answer    replyKind = iota // the reply to the oldest command still waiting for one
	push                       // RESP3 out-of-band data (a Pub/Sub message, an invalidation)
	attribute                  // RESP3 metadata that precedes an answer
)

// parseReply returns the length of the first complete reply frame in buf,
// RESP2 or RESP3, and how it counts.
func parseReply(buf []byte) (n int, kind replyKind, ok bool, err error) {
	if len(buf) == 0 {
		return 0, answer, false, nil
	}
	switch buf[0] {
	case '>':
		kind = push
	case '|':
		kind = attribute
	}
	n, ok, err = frame(buf, 0)
	return n, kind, ok, err
}

// frame returns the end of the RESP value that starts at buf[pos].
func frame(buf []byte, pos int) (end int, ok bool, err error) {
	if pos >= len(buf) {
		return 0, false, tooLong(len(buf))
	}
	switch buf[pos] {
	case '+', '-', ':', '_', '#', ',', '(':
		i := bytes.IndexByte(buf[pos:], '\n')
		if i < 0 {
			return 0, false, tooLong(len(buf))
		}
		return pos + i + 1, true, nil
	case '$', '!', '=':
		size, start, ok, err := header(buf, pos)
		if !ok || err != nil {
			return 0, ok, err
		}
		if size < 0 {
			return start, true, nil // null bulk string
		}
		end := start + size + 2
		if end > len(buf) {
			return 0, false, tooLong(end)
		}
		return end, true, nil
	case '*', '~', '>', '%', '|':
		count, next, ok, err := header(buf, pos)
		if !ok || err != nil {
			return 0, ok, err
		}
		if count < 0 {
			return next, true, nil // null array
		}
		if buf[pos] == '%' || buf[pos] == '|' {
			count *= 2 // maps and attributes hold pairs
		}
		for range count {
			if next, ok, err = frame(buf, next); !ok || err != nil {
				return 0, ok, err
			}
		}
		return next, true, nil
	}
	return 0, false, errProtocol
}

// firstKey returns the key a command acts on, for matching: the first key
// of EVAL, EVALSHA and FCALL (after the script and the key count), the first
// argument of anything else.
func (c command) firstKey() string {
	switch c.name {
	case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO":
		if len(c.args) >= 3 {
			if n, err := strconv.Atoi(string(c.args[1])); err == nil && n > 0 {
				return string(c.args[2])
			}
		}
		return ""
	}
	if len(c.args) > 0 {
		return string(c.args[0])
	}
	return ""
}

// script returns the SHA-1 (hex) of the script an EVAL or EVALSHA runs, or
// "" for other commands.
func (c command) script() string {
	if len(c.args) == 0 {
		return ""
	}
	switch c.name {
	case "EVALSHA", "EVALSHA_RO":
		return strings.ToLower(string(c.args[0]))
	case "EVAL", "EVAL_RO":
		sum := sha1.Sum(c.args[0])
		return hex.EncodeToString(sum[:])
	}
	return ""
}

// subscribes reports whether the command puts the connection into Pub/Sub
// mode, after which replies no longer pair with commands.
func (c command) subscribes() bool {
	switch c.name {
	case "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE":
		return true
	}
	return false
}
