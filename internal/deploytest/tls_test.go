package deploytest_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/internal/rig"
)

// testPKI is a throwaway certificate authority and a server certificate
// for 127.0.0.1 and localhost, written as PEM files for redis-server.
type testPKI struct {
	pool                      *x509.CertPool // trusts the CA
	caFile, certFile, keyFile string
}

func newPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, caDER := issue(t, &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "locklab test CA"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, nil, nil)
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, srvDER := issue(t, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}, ca, caKey)
	keyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	p := testPKI{
		pool:     x509.NewCertPool(),
		caFile:   filepath.Join(dir, "ca.crt"),
		certFile: filepath.Join(dir, "server.crt"),
		keyFile:  filepath.Join(dir, "server.key"),
	}
	p.pool.AddCert(ca)
	for file, block := range map[string]*pem.Block{
		p.caFile:   {Type: "CERTIFICATE", Bytes: caDER},
		p.certFile: {Type: "CERTIFICATE", Bytes: srvDER},
		p.keyFile:  {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// issue makes a P-256 key and a certificate for it from tmpl, valid from
// an hour ago for a day, signed with parentKey as parent (self-signed when
// parent is nil), and returns the key and the certificate's DER.
func issue(t *testing.T, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return key, der
}

// tlsNode is a rig server with a TLS port beside its plain one (the rig
// checks readiness and the test sets up users over the plain port).
type tlsNode struct {
	*rig.Node
	tlsAddr string
}

// newTLSNode starts a server listening for TLS on a second free port. A
// port found free may be taken before the server binds it; then another
// is tried. The caller must Close the node.
func newTLSNode(ctx context.Context, p testPKI) (tlsNode, error) {
	for attempt := 0; ; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return tlsNode{}, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		n, err := rig.New(ctx, rig.WithArgs(
			"--tls-port", strconv.Itoa(port),
			"--tls-cert-file", p.certFile,
			"--tls-key-file", p.keyFile,
			"--tls-ca-cert-file", p.caFile,
			"--tls-auth-clients", "no", // server-authenticated TLS; the ACL user authenticates the client
		))
		if err == nil {
			return tlsNode{n, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}, nil
		}
		if attempt == 4 || !strings.Contains(strings.ToLower(err.Error()), "address already in use") {
			return tlsNode{}, fmt.Errorf("start redis-server with --tls-port: %w", err)
		}
	}
}

// TestTLSWithACLUser runs every lock package over rediss:// URLs, as its
// ACL user, against servers with a TLS port and a certificate from a CA
// made in the test (redis-server 7 from Debian and Homebrew is built with
// TLS). The client trusts only that CA.
func TestTLSWithACLUser(t *testing.T) {
	pki := newPKI(t)
	nodes := make([]tlsNode, 3) // redlock needs three independent servers
	var g errgroup.Group
	for i := range nodes {
		g.Go(func() (err error) {
			nodes[i], err = newTLSNode(context.Background(), pki)
			return err
		})
	}
	err := g.Wait()
	for _, n := range nodes {
		if n.Node != nil {
			t.Cleanup(func() { _ = n.Close() })
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	admins := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		admins[i] = secure(t, ctx, n.Node, kinds)
	}
	trust := func(o *redis.Options) { o.TLSConfig.RootCAs = pki.pool }

	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			exerciseAsUser(t, ctx, k, admins, func(i int) string { return lockURL("rediss", nodes[i].tlsAddr, k) }, trust)
		})
	}

	// The TLS port speaks only TLS, and only to clients that trust its CA.
	k := kinds[0]
	plain := clientFromURL(t, lockURL("redis", nodes[0].tlsAddr, k), nil)
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Error("plain-text PING to the TLS port succeeded; want an error")
	}
	stranger := clientFromURL(t, lockURL("rediss", nodes[0].tlsAddr, k), nil) // system roots only
	var unknown x509.UnknownAuthorityError
	if err := stranger.Ping(ctx).Err(); !errors.As(err, &unknown) {
		t.Errorf("rediss PING without the test CA = %v; want x509.UnknownAuthorityError", err)
	}
	opt, err := redis.ParseURL(lockURL("rediss", nodes[0].tlsAddr, k))
	if err != nil || opt.TLSConfig == nil || opt.TLSConfig.MinVersion < tls.VersionTLS12 || opt.TLSConfig.ServerName != "127.0.0.1" {
		t.Errorf("redis.ParseURL(rediss://...) TLS config = %+v, %v; want TLS 1.2+ verifying 127.0.0.1", opt.TLSConfig, err)
	}
}
