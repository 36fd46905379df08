package zklock

import (
	"testing"
	"time"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/rig"
)

// TestAnsweredSendTime: the Session dates the server's last hearing from
// the client by when the answered request was sent, not when the answer
// came back: with 300ms each way, the connect request's answer arrives
// 600ms after it was sent, and the date is the send.
func TestAnsweredSendTime(t *testing.T) {
	t.Parallel()
	z := rig.StartZooKeeper(t, 1, rig.WithZooKeeperForTests())
	p := faultproxy.Start(t, z.Addrs()[0])
	const latency = 300 * time.Millisecond
	p.SetLatency(latency)
	s, err := Connect([]string{p.Addr()}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.mu.Lock()
	age, negotiated := time.Since(s.acked), s.negotiated
	s.mu.Unlock()
	if age < 2*latency {
		t.Errorf("the last answered request was sent %v ago, just after the answer to the connect request came; want at least %v (a round trip)", age, 2*latency)
	}
	if negotiated != 10*time.Second {
		t.Errorf("negotiated timeout = %v; want 10s", negotiated)
	}
}
