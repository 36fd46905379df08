package faultproxy_test

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/faultproxy"
)

// TestBinaryProtocolPassesThrough: a protocol that is not RESP and sends
// no newline (ZooKeeper's and PostgreSQL's messages begin with a binary
// length) reaches the server at once, and so does the server's answer.
func TestBinaryProtocolPassesThrough(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 8)
		if _, err := io.ReadFull(c, buf); err == nil {
			_, _ = c.Write(append([]byte{0, 0, 0, 4}, buf[4:]...))
		}
	}()
	p := faultproxy.Start(t, ln.Addr().String())
	c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	msg := []byte{0, 0, 0, 4, 0xde, 0xad, 0xbe, 0xef}
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 8)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("no answer through the proxy: %v", err)
	}
	if want := msg; !bytes.Equal(got, want) {
		t.Errorf("answer = % x; want % x", got, want)
	}
}
