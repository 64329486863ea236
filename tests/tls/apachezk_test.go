package tls_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/testcluster"
)

// observed is what a client sees of a secure client port.
type observed struct {
	whoAmI    string // the x509 entry of whoAmI for a certificate with a subject full of escapes
	noCert    bool   // a client without a certificate got a connect response
	plaintext string // what a plaintext connect request got back before the close
}

func observe(t *testing.T, e *env, addr string) observed {
	var o observed
	type atv struct {
		Type  asn1.ObjectIdentifier
		Value asn1.RawValue
	}
	type rdnSET []atv
	utf := func(s string) asn1.RawValue {
		return asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagUTF8String, Bytes: []byte(s)}
	}
	raw, err := asn1.Marshal([]rdnSET{{{asn1.ObjectIdentifier{2, 5, 4, 10}, utf("corp")}},
		{{asn1.ObjectIdentifier{2, 5, 4, 3}, utf(`a,b "c"`)}, {asn1.ObjectIdentifier{2, 5, 4, 11}, utf(" #eng")}},
		{{asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagIA5String, Bytes: []byte("a@b.c")}}}})
	if err != nil {
		t.Fatal(err)
	}
	l := e.ca.Issue(t, pkix.Name{}, raw)
	cfg := e.tlsConfig(t, "")
	cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{l.Cert.Raw}, PrivateKey: l.Key}}
	for _, id := range whoAmI(t, addr, cfg) {
		if id.AuthScheme == "x509" {
			o.whoAmI = id.User
		}
	}
	if nc, err := tls.Dial("tcp", addr, e.tlsConfig(t, "")); err == nil {
		nc.Write(connectFrame())
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(nc)
		o.noCert = len(b) > 0
		nc.Close()
	}
	if nc, err := net.Dial("tcp", addr); err == nil {
		nc.Write(connectFrame())
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(nc)
		o.plaintext = fmt.Sprintf("%x (err %v)", b, err)
		nc.Close()
	}
	return o
}

// TestCompareApacheZooKeeper runs the same probes against Apache ZooKeeper 3.8 (the Debian
// package, NettyServerCnxnFactory, the same PEM stores) and Corral: the x509 identity of a
// certificate whose subject needs escapes, a client without a certificate under
// ssl.clientAuth=need, and a plaintext client on the secure port.
func TestCompareApacheZooKeeper(t *testing.T) {
	if err := apachezk.Available(); err != nil {
		t.Skipf("Apache ZooKeeper is not available: %v", err)
	}
	e := start(t, "need")
	port := testcluster.FreePorts(t, 1)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, j := range apachezk.NettyJars {
		if _, err := os.Stat(j); err != nil {
			t.Skipf("Apache ZooKeeper cannot serve TLS here: %v (Debian's libnetty-java)", err)
		}
	}
	zkEns, err := apachezk.Start(ctx, apachezk.Options{ExtraJars: apachezk.NettyJars, Config: map[string]string{
		"secureClientPort":        fmt.Sprint(port),
		"serverCnxnFactory":       "org.apache.zookeeper.server.NettyServerCnxnFactory",
		"ssl.keyStore.location":   e.keyPath,
		"ssl.trustStore.location": e.dir + "/ca.pem",
	}})
	if err != nil {
		t.Skipf("Apache ZooKeeper with a secure client port did not start here: %v", err)
	}
	defer zkEns.Close()
	zkAddr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", zkAddr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Skipf("Apache ZooKeeper's secure port %s does not listen (Netty missing?): %v", zkAddr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	theirs := observe(t, e, zkAddr)
	ours := observe(t, e, e.secure)
	t.Logf("Apache ZooKeeper: %+v", theirs)
	t.Logf("Corral:           %+v", ours)
	if ours != theirs {
		t.Errorf("Corral %+v, Apache ZooKeeper %+v", ours, theirs)
	}
}
