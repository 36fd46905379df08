package faults

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer accepts connections and echoes every read back; each chunk it
// reads is also sent on got, and io.EOF when a connection ends.
func echoServer(t *testing.T) (addr string, got chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got = make(chan []byte, 64)
	done := make(chan struct{})
	t.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						got <- append([]byte(nil), buf[:n]...)
						_, _ = c.Write(buf[:n])
					}
					if err != nil {
						got <- nil
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), got
}

func rawDial(t *testing.T, rn *RawNet, target string) net.Conn {
	t.Helper()
	addr, err := rn.Listen(target)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

func recvChunk(t *testing.T, got chan []byte) []byte {
	t.Helper()
	select {
	case b := <-got:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("the server got nothing in 10s")
		return nil
	}
}

// TestRawNetLosesTheReplyOfTheArmedChunk: the second chunk the client
// sends reaches the server, and the client's connection is reset instead
// of getting the answer; the first chunk is answered as usual.
func TestRawNetLosesTheReplyOfTheArmedChunk(t *testing.T) {
	target, got := echoServer(t)
	rn := NewRawNet()
	t.Cleanup(rn.Close)
	c := rawDial(t, rn, target)
	rn.Arm(RawDrop, 1)
	buf := make([]byte, 8)
	if _, err := c.Write([]byte("one")); err != nil {
		t.Fatal(err)
	}
	if n, err := io.ReadFull(c, buf[:3]); err != nil || string(buf[:n]) != "one" {
		t.Fatalf("first answer = %q, %v; want \"one\", nil", buf[:n], err)
	}
	if b := recvChunk(t, got); string(b) != "one" {
		t.Fatalf("server got %q; want \"one\"", b)
	}
	if _, err := c.Write([]byte("two")); err != nil {
		t.Fatal(err)
	}
	if b := recvChunk(t, got); string(b) != "two" {
		t.Fatalf("server got %q; want \"two\" (the armed chunk is delivered)", b)
	}
	if n, err := c.Read(buf); err == nil {
		t.Fatalf("client read %q after the armed chunk; want the connection reset", buf[:n])
	}
	if !rn.HasFired() || rn.Count() != 2 {
		t.Errorf("fired %v, count %d; want true, 2", rn.HasFired(), rn.Count())
	}
}

// TestRawNetHoldsUntilRelease: from the armed chunk on, nothing reaches
// the server, even after the client has closed its connection; on
// release the held bytes are delivered, then the close.
func TestRawNetHoldsUntilRelease(t *testing.T) {
	target, got := echoServer(t)
	rn := NewRawNet()
	t.Cleanup(rn.Close)
	c := rawDial(t, rn, target)
	rn.Arm(RawHold, 0)
	if _, err := c.Write([]byte("late")); err != nil {
		t.Fatal(err)
	}
	<-rn.FiredC()
	_ = c.Close()
	// Wait until the proxy has read the client's close: it is held too.
	deadline := time.Now().Add(10 * time.Second)
	for {
		rn.Mu.Lock()
		eof := false
		for rc := range rn.Conns {
			eof = eof || rc.UpEOF
		}
		rn.Mu.Unlock()
		if eof {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the proxy never saw the client close")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case b := <-got:
		t.Fatalf("server got %q while held; want nothing before release", b)
	default:
	}
	if !rn.IsHolding() {
		t.Fatal("not holding after the armed chunk")
	}
	rn.Release()
	var all []byte
	for {
		b := recvChunk(t, got)
		if b == nil {
			break
		}
		all = append(all, b...)
	}
	if !bytes.Equal(all, []byte("late")) {
		t.Errorf("server got %q after release; want \"late\", then the close", all)
	}
}
