package zkimport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/acl"
	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/testcerts"
	"github.com/corral/corral/internal/testcluster"
)

// TestStatsWithAdminAuth: against a target whose admin port needs an operator
// (corral.admin.digest), setting stats fails with the 401 without Options.AdminAuth and with the
// 403 with a wrong password, and succeeds with the operator's credentials.
func TestStatsWithAdminAuth(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 1, Shards: 1, Admin: true,
		Extra: []string{"corral.admin.digest=" + acl.Digest("importer:s3cret")}})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr := cl.AdminAddr(0)
	c := dial(t, cl.Addrs())
	defer c.Close()
	mustCreate(t, c, "/imported", []byte("x"), 0, zk.WorldACL(zk.PermAll))
	_, st, err := c.Get("/imported")
	must(t, err)
	lines := []cluster.StatLine{{Path: "/imported", Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid,
		Ctime: 1000, Mtime: 2000, Version: 7, Aversion: 0, Cversion: 0}}

	if err := PostStats(ctx, addr, "", nil, lines); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("without credentials: %v, want the 401", err)
	}
	if err := PostStats(ctx, addr, "importer:wrong", nil, lines); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("with a wrong password: %v, want the 403", err)
	}
	if err := PostStats(ctx, addr, "importer:s3cret", nil, lines); err != nil {
		t.Fatalf("with the operator's credentials: %v", err)
	}
	if _, st, err := c.Get("/imported"); err != nil || st.Version != 7 || st.Mtime != 2000 {
		t.Errorf("stat after the import: %+v %v", st, err)
	}
}

// TestStatsOverHTTPS: against an HTTPS admin port (admin.forceHttps) whose operators are
// certificate subjects (corral.admin.x509), setting stats fails over plain HTTP and succeeds
// with Options.AdminTLS presenting the operator's certificate.
func TestStatsOverHTTPS(t *testing.T) {
	ca := testcerts.NewCA(t, t.TempDir(), "admin-ca")
	cl := testcluster.Start(t, testcluster.Options{Servers: 1, Shards: 1, Admin: true,
		Extra: []string{"admin.forceHttps=true", "corral.admin.x509=CN=importer", "corral.admin.trustLoopback=false",
			"ssl.quorum.keyStore.location=" + ca.WritePEM(t, ca.Issue(t, pkix.Name{CommonName: "server"}, nil), "server.pem"),
			"ssl.quorum.trustStore.location=" + ca.WriteTrustPEM(t, "ca.pem")}})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := dial(t, cl.Addrs())
	defer c.Close()
	mustCreate(t, c, "/imported", []byte("x"), 0, zk.WorldACL(zk.PermAll))
	_, st, err := c.Get("/imported")
	must(t, err)
	lines := []cluster.StatLine{{Path: "/imported", Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid, Ctime: 1000, Mtime: 2000, Version: 7}}
	if err := PostStats(ctx, cl.AdminAddr(0), "", nil, lines); err == nil {
		t.Errorf("plain HTTP to an HTTPS admin port: no error")
	}
	op := ca.Issue(t, pkix.Name{CommonName: "importer"}, nil)
	tc := &tls.Config{RootCAs: x509.NewCertPool(), Certificates: []tls.Certificate{{Certificate: [][]byte{op.Cert.Raw}, PrivateKey: op.Key}}}
	tc.RootCAs.AddCert(ca.Cert)
	if err := PostStats(ctx, cl.AdminAddr(0), "", tc, lines); err != nil {
		t.Fatalf("over HTTPS with the operator's certificate: %v", err)
	}
	if _, st, err := c.Get("/imported"); err != nil || st.Version != 7 {
		t.Errorf("stat after the import: %+v %v", st, err)
	}
}
