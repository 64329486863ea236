// Package testcerts makes certificates and key and trust stores for TLS tests at run time: a CA,
// server and client certificates signed by it, written as PEM files, and as PKCS12 and JKS
// stores by Java's keytool when it is installed (tests that need those skip otherwise).
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// CA is a certificate authority that signs test certificates.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	Dir  string
}

var serial int64 = 1

// NewCA makes a CA named cn whose files go to dir.
func NewCA(t testing.TB, dir, cn string) *CA {
	t.Helper()
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	l := sign(t, tmpl, nil, nil)
	return &CA{Cert: l.Cert, Key: l.Key, Dir: dir}
}

// sign makes a key and a certificate of tmpl, valid from an hour ago for a day, signed by
// parent (self-signed when nil).
func sign(t testing.TB, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) Leaf {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	serial++
	tmpl.SerialNumber = big.NewInt(serial)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return Leaf{Cert: cert, Key: key}
}

// Leaf is a certificate signed by a CA, with its key.
type Leaf struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// Issue signs a certificate for subject (a pkix.Name, or raw DER of a Name when rawSubject is
// set), good for servers on 127.0.0.1/localhost and for clients.
func (ca *CA) Issue(t testing.TB, subject pkix.Name, rawSubject []byte) Leaf {
	t.Helper()
	return sign(t, &x509.Certificate{
		Subject: subject, RawSubject: rawSubject, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}, ca.Cert, ca.Key)
}

// IssueFor signs a certificate for subject whose subject alternative names are exactly ips
// and dnsNames (peers whose certificate does or does not name their address).
func (ca *CA) IssueFor(t testing.TB, subject pkix.Name, ips []net.IP, dnsNames []string) Leaf {
	t.Helper()
	return sign(t, &x509.Certificate{
		Subject: subject, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: ips, DNSNames: dnsNames,
	}, ca.Cert, ca.Key)
}

// WritePEM writes the leaf's key and certificate (then the CA's) as one PEM key store, and
// returns its path.
func (ca *CA) WritePEM(t testing.TB, l Leaf, name string) string {
	t.Helper()
	kb, err := x509.MarshalPKCS8PrivateKey(l.Key)
	if err != nil {
		t.Fatal(err)
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb})
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: l.Cert.Raw})...)
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})...)
	return ca.write(t, name, out)
}

// WriteCertPEM writes the leaf's certificate and key as two PEM files (kazoo's certfile and
// keyfile) and returns their paths.
func (ca *CA) WriteCertPEM(t testing.TB, l Leaf, name string) (certFile, keyFile string) {
	t.Helper()
	kb, err := x509.MarshalPKCS8PrivateKey(l.Key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = ca.write(t, name+".crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: l.Cert.Raw}))
	keyFile = ca.write(t, name+".key", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}))
	return certFile, keyFile
}

// WriteTrustPEM writes the CA certificate as a PEM trust store.
func (ca *CA) WriteTrustPEM(t testing.TB, name string) string {
	return ca.write(t, name, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}))
}

// WriteP12 writes the leaf as a PKCS12 key store (go-pkcs12, modern encryption).
func (ca *CA) WriteP12(t testing.TB, l Leaf, name, password string) string {
	t.Helper()
	b, err := pkcs12.Modern.Encode(l.Key, l.Cert, []*x509.Certificate{ca.Cert}, password)
	if err != nil {
		t.Fatal(err)
	}
	return ca.write(t, name, b)
}

func (ca *CA) write(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(ca.Dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Keytool returns the keytool binary, or skips the test.
func Keytool(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("keytool")
	if err != nil {
		t.Skip("keytool (Java) is not installed: JKS and keytool-made PKCS12 stores cannot be made")
	}
	return p
}

// KeytoolKeyStore converts the leaf (through a PKCS12 file) into a key store of storeType
// (JKS or PKCS12) made by keytool, and returns its path.
func (ca *CA) KeytoolKeyStore(t testing.TB, l Leaf, name, storeType, password string) string {
	t.Helper()
	kt := Keytool(t)
	src := ca.WriteP12(t, l, name+".src.p12", password)
	dst := filepath.Join(ca.Dir, name)
	os.Remove(dst)
	run(t, kt, "-importkeystore", "-noprompt", "-srckeystore", src, "-srcstoretype", "PKCS12", "-srcstorepass", password,
		"-destkeystore", dst, "-deststoretype", storeType, "-deststorepass", password, "-destkeypass", password)
	return dst
}

// KeytoolTrustStore makes a trust store of storeType holding the CA certificate.
func (ca *CA) KeytoolTrustStore(t testing.TB, name, storeType, password string) string {
	t.Helper()
	kt := Keytool(t)
	crt := ca.WriteTrustPEM(t, name+".ca.pem")
	dst := filepath.Join(ca.Dir, name)
	os.Remove(dst)
	run(t, kt, "-importcert", "-noprompt", "-alias", "ca", "-file", crt, "-keystore", dst, "-storetype", storeType, "-storepass", password)
	return dst
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}
