package main

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/corral/corral/adminauth"
	"github.com/corral/corral/internal/testcerts"
)

// TestAdminTLSFlags: with --admin-ca (or $CORRAL_ADMIN_CA) the commands call the admin port
// over HTTPS, and --admin-cert (or $CORRAL_ADMIN_CERT) presents a certificate that
// corral.admin.x509 makes an operator; without them an HTTPS port is not reached.
func TestAdminTLSFlags(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "admin-ca")
	var s adminauth.Settings
	for k, v := range map[string]string{"corral.admin.x509": "CN=op", "corral.admin.trustLoopback": "false", "admin.forceHttps": "true"} {
		if _, err := s.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	srv := httptest.NewUnstartedServer(adminauth.New(s, "", slog.New(slog.NewTextHandler(&strings.Builder{}, nil)), ok))
	sl := ca.Issue(t, pkix.Name{CommonName: "server"}, nil)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{sl.Cert.Raw}, PrivateKey: sl.Key}},
		ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
	srv.StartTLS()
	defer srv.Close()
	admin := strings.TrimPrefix(srv.URL, "https://")
	caFile := ca.WriteTrustPEM(t, "ca.pem")
	op := ca.WritePEM(t, ca.Issue(t, pkix.Name{CommonName: "op"}, nil), "op.pem")
	other := ca.WritePEM(t, ca.Issue(t, pkix.Name{CommonName: "other"}, nil), "other.pem")

	for i, tt := range []struct {
		ca, cert string // environment
		args     []string
		want     int
	}{
		0: {"", "", []string{"list", "--admin", admin}, 1}, // plain HTTP to an HTTPS port
		1: {"", "", []string{"list", "--admin", admin, "--admin-ca", caFile}, 0},
		2: {"", "", []string{"add", "--admin", admin, "--admin-ca", caFile}, 1},
		3: {"", "", []string{"add", "--admin", admin, "--admin-ca", caFile, "--admin-cert", op}, 0},
		4: {"", "", []string{"add", "--admin", admin, "--admin-ca", caFile, "--admin-cert", other}, 1},
		5: {caFile, op, []string{"add", "--admin", admin}, 0},
		6: {"", op, []string{"list", "--admin", admin}, 1}, // a certificate but no CA: the server is not trusted
	} {
		t.Setenv(envAdminCA, tt.ca)
		t.Setenv(envAdminCert, tt.cert)
		if got := runShards(tt.args); got != tt.want {
			t.Errorf("%d: corral shards %s (env ca=%q cert=%q) = %d, want %d", i, strings.Join(tt.args, " "), tt.ca, tt.cert, got, tt.want)
		}
	}
}
