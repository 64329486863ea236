package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/corral/corral/adminauth"
	"github.com/corral/corral/tlsconf"
)

// runShards calls a server's admin endpoints for data shards (cluster/addshard.go):
//
//	corral shards list --admin host:port
//	corral shards add  --admin host:port [--expect N]
//
// add creates a new data shard (a Raft group on every server) that serves nothing until a
// subtree is moved onto it (corral move); --expect N adds only if the ensemble has N data
// shards now, so a retried command never adds two. It prints the server's answer and exits 1 if
// the request was refused or failed.
func runShards(args []string) int {
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, "usage: corral shards list|add --admin host:port [--expect N]")
		return 2
	}
	op := args[0]
	fs := flag.NewFlagSet("shards "+op, flag.ContinueOnError)
	admin := fs.String("admin", "127.0.0.1:8080", "admin address (admin.serverAddress:admin.serverPort) of any running server")
	expect := fs.Int("expect", 0, "add: only if the ensemble has this many data shards now (see list)")
	timeout := fs.Duration("timeout", 60*time.Second, "how long the server keeps trying")
	auth := adminAuthFlag(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	q := url.Values{}
	var method, path string
	switch op {
	case "list":
		method, path = http.MethodGet, "/shards/list"
	case "add":
		method, path = http.MethodPost, "/shards/add"
		q.Set("timeout", timeout.String())
		if *expect > 0 {
			q.Set("expect", strconv.Itoa(*expect))
		}
	default:
		fmt.Fprintf(os.Stderr, "corral shards: unknown operation %q (list, add)\n", op)
		return 2
	}
	return adminCall("shards "+op, method, "http://"+*admin+path+"?"+q.Encode(), *timeout+10*time.Second, adminauth.FromEnv(*auth))
}

// adminTLS is the admin port's HTTPS (admin.forceHttps): --admin-ca, --admin-cert, registered
// with --admin-auth by adminAuthFlag; one command runs per process.
var adminTLS struct{ ca, cert *string }

// Environment variables for the admin port's HTTPS, read when the flags are not given.
const (
	envAdminCA   = "CORRAL_ADMIN_CA"
	envAdminCert = "CORRAL_ADMIN_CERT"
)

// adminAuthFlag adds --admin-auth, --admin-ca and --admin-cert to a command that calls the
// admin port.
func adminAuthFlag(fs *flag.FlagSet) *string {
	adminTLS.ca = fs.String("admin-ca", "", "PEM file of the CA that signed the admin port's certificate: call it over HTTPS (admin.forceHttps); default $"+envAdminCA)
	adminTLS.cert = fs.String("admin-cert", "", "PEM key store (key and certificates) to present to an HTTPS admin port (admin.needClientAuth, corral.admin.x509); default $"+envAdminCert)
	return fs.String("admin-auth", "", "admin operator credentials user:password (superDigest or corral.admin.digest user), sent as \"Authorization: digest user:password\"; default $"+adminauth.EnvAuth)
}

// adminCall sends one request to an admin endpoint, with the operator credentials cred
// (user:password, "" for none), copies the answer to stdout (stderr when it failed) and returns
// the exit status: 0 for 200, 1 otherwise.
func adminCall(what, method, u string, timeout time.Duration, cred string) int {
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "corral %s: %v\n", what, err)
		return 2
	}
	adminauth.SetHeader(req, cred)
	client := &http.Client{Timeout: timeout}
	if cfg, err := adminTLSConfig(); err != nil {
		fmt.Fprintf(os.Stderr, "corral %s: %v\n", what, err)
		return 2
	} else if cfg != nil {
		req.URL.Scheme = "https"
		client.Transport = &http.Transport{TLSClientConfig: cfg}
	}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(os.Stderr, "corral %s: %v\n", what, err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		fmt.Fprintf(os.Stderr, "corral %s: %s: %s", what, resp.Status, body)
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			fmt.Fprintf(os.Stderr, "corral %s: the admin port wants an operator: --admin-auth user:password or $%s (docs/operations.md \"Admin port\")\n", what, adminauth.EnvAuth)
		}
		return 1
	}
	io.Copy(os.Stdout, resp.Body)
	return 0
}

// adminTLSConfig returns the HTTPS client configuration of --admin-ca and --admin-cert (or
// their environment variables); nil when neither is set (plain HTTP).
func adminTLSConfig() (*tls.Config, error) {
	pick := func(flag *string, env string) string {
		if flag != nil && *flag != "" {
			return *flag
		}
		return os.Getenv(env)
	}
	ca, cert := pick(adminTLS.ca, envAdminCA), pick(adminTLS.cert, envAdminCert)
	if ca == "" && cert == "" {
		return nil, nil
	}
	cfg := &tls.Config{}
	if ca != "" {
		pool, err := tlsconf.LoadTrustStore(tlsconf.Store{Location: ca, Type: "PEM"}, "--admin-ca")
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if cert != "" {
		c, err := tlsconf.LoadKeyStore(tlsconf.Store{Location: cert, Type: "PEM"}, "--admin-cert")
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}
