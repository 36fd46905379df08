package rig

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/internal/proc"
)

// pgTemplateMu serializes this process's template checks; other processes
// race safely through the atomic rename in pgTemplate.
var pgTemplateMu sync.Mutex

// pgTemplate returns a data directory made by initdb for the server in bin,
// owned by uid, to be copied for each server. It is made once per machine,
// user and server version, under the temporary directory, and kept there:
// initdb takes about 3s, a copy a small fraction of that.
func pgTemplate(ctx context.Context, bin string, uid, gid uint32) (string, error) {
	pgTemplateMu.Lock()
	defer pgTemplateMu.Unlock()
	out, err := exec.Command(filepath.Join(bin, "postgres"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("rig: %s --version: %w", filepath.Join(bin, "postgres"), err)
	}
	// "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
	version := "unknown"
	if f := strings.Fields(string(out)); len(f) >= 3 {
		version = strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' || r == '.' {
				return r
			}
			return '_'
		}, f[2])
	}
	home := filepath.Join(os.TempDir(), fmt.Sprintf("locklab-postgres-template-%s-%d", version, uid))
	data := filepath.Join(home, "data")
	if _, err := os.Stat(filepath.Join(home, "ok")); err == nil {
		return data, nil
	}

	tmp, err := os.MkdirTemp("", "locklab-postgres-initdb-")
	if err != nil {
		return "", fmt.Errorf("rig: %w", err)
	}
	defer os.RemoveAll(tmp) // gone once renamed
	if err := os.Chown(tmp, int(uid), int(gid)); err != nil {
		return "", fmt.Errorf("rig: %w", err)
	}
	var log bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", filepath.Join(tmp, "data"), "-U", pgUser, "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	cmd.Dir = tmp
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := proc.StartAs(cmd, uid, gid); err != nil {
		return "", fmt.Errorf("rig: initdb: %w", err)
	}
	if err := cmd.Wait(); err != nil {
		return "", fmt.Errorf("rig: initdb: %w\n%s", err, log.String())
	}
	if err := os.WriteFile(filepath.Join(tmp, "ok"), nil, 0o644); err != nil {
		return "", fmt.Errorf("rig: %w", err)
	}
	if err := os.Rename(tmp, home); err != nil {
		// Another process made it first.
		if _, serr := os.Stat(filepath.Join(home, "ok")); serr == nil {
			return data, nil
		}
		return "", fmt.Errorf("rig: keep the PostgreSQL template: %w", err)
	}
	return data, nil
}

// copyTree copies the directory src to dst (which must not exist), keeping
// permissions and, when this process is root, making uid:gid the owner.
func copyTree(src, dst string, uid, gid uint32) error {
	chown := func(p string) error {
		if os.Geteuid() != 0 {
			return nil
		}
		return os.Lchown(p, int(uid), int(gid))
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, info.Mode().Perm()); err != nil {
				return err
			}
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if err := copyFile(p, target, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a regular file", p)
		}
		return chown(target)
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// pgProbe reports nil once the server at addr lets the rig's user log in:
// it speaks the start of PostgreSQL's wire protocol (StartupMessage, then
// messages until ReadyForQuery) and says goodbye (Terminate). A server
// still starting or recovering answers with an error, returned as is.
func pgProbe(ctx context.Context, addr string) error {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	var body bytes.Buffer
	_ = binary.Write(&body, binary.BigEndian, int32(196608)) // protocol 3.0
	for _, s := range []string{"user", pgUser, "database", pgDatabase, ""} {
		body.WriteString(s)
		body.WriteByte(0)
	}
	msg := binary.BigEndian.AppendUint32(nil, uint32(body.Len()+4))
	if _, err := conn.Write(append(msg, body.Bytes()...)); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	for {
		typ, err := r.ReadByte()
		if err != nil {
			return err
		}
		var n uint32
		if err := binary.Read(r, binary.BigEndian, &n); err != nil {
			return err
		}
		if n < 4 || n > 1<<20 {
			return fmt.Errorf("rig: PostgreSQL at %s sent a message of length %d", addr, n)
		}
		payload := make([]byte, n-4)
		if _, err := io.ReadFull(r, payload); err != nil {
			return err
		}
		switch typ {
		case 'E': // ErrorResponse: fields of a type byte and a string
			return errors.New("rig: PostgreSQL: " + pgErrorText(payload))
		case 'R':
			if len(payload) >= 4 && binary.BigEndian.Uint32(payload) != 0 {
				return fmt.Errorf("rig: PostgreSQL at %s asks for authentication (method %d); the rig's servers trust loopback", addr, binary.BigEndian.Uint32(payload))
			}
		case 'Z': // ReadyForQuery
			_, _ = conn.Write([]byte{'X', 0, 0, 0, 4})
			return nil
		}
	}
}

// pgErrorText returns the message (M) and code (C) fields of an
// ErrorResponse.
func pgErrorText(payload []byte) string {
	var msg, code string
	for _, f := range bytes.Split(payload, []byte{0}) {
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case 'M':
			msg = string(f[1:])
		case 'C':
			code = string(f[1:])
		}
	}
	return msg + " (SQLSTATE " + code + ")"
}
