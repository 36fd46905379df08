package sysclient

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

const (
	// etcdDialTimeout bounds the first connection to a member.
	etcdDialTimeout = 2 * time.Second
	// etcdKeepAlive is the gRPC keep-alive ping interval and timeout: a
	// connection to a member that stopped answering (paused, partitioned)
	// is closed after about twice this, and the client moves to another
	// endpoint.
	etcdKeepAlive = time.Second
)

// Etcd returns a client for the members at endpoints ("127.0.0.1:port"),
// each tried in turn. Close it when done.
func Etcd(endpoints ...string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          etcdDialTimeout,
		DialKeepAliveTime:    etcdKeepAlive,
		DialKeepAliveTimeout: etcdKeepAlive,
		Logger:               zap.NewNop(),
	})
}
