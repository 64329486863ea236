package tlsconf

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// resolvedType is the store's type: the configured one, or the one its file name implies
// (KeyStoreFileType.fromFilename; .pfx is Corral's addition).
func (st Store) resolvedType(key string) (string, error) {
	if st.Type != "" {
		return st.Type, nil
	}
	switch strings.ToLower(filepath.Ext(st.Location)) {
	case ".pem":
		return "PEM", nil
	case ".p12", ".pfx":
		return "PKCS12", nil
	case ".jks":
		return "JKS", nil
	case ".bcfks":
		return "", fmt.Errorf("%w: %s: BCFKS stores are not supported (PEM, PKCS12, JKS are)", ErrStore, st.Location)
	}
	return "", fmt.Errorf("%w: cannot tell the type of %s from its name (.pem, .p12, .pfx, .jks); set %s.type", ErrStore, st.Location, key)
}

// password returns the store's password: *.password, or the contents of *.passwordPath
// without one trailing line break (ZooKeeper's SecretUtils.readSecret).
func (st Store) password(key string) (string, error) {
	if st.PasswordPath == "" {
		return st.Password, nil
	}
	b, err := os.ReadFile(st.PasswordPath)
	if err != nil {
		return "", fmt.Errorf("%w: %s.passwordPath: %w", ErrStore, key, err)
	}
	s := string(b)
	s = strings.TrimSuffix(s, "\n")
	s = strings.TrimSuffix(s, "\r")
	return s, nil
}

// files are the paths whose changes make a reload.
func (st Store) files() []string {
	out := []string{st.Location}
	if st.PasswordPath != "" {
		out = append(out, st.PasswordPath)
	}
	return out
}

// LoadKeyStore reads the server's certificate chain and private key. key is the zoo.cfg key
// prefix ("ssl.keyStore") errors name.
func LoadKeyStore(st Store, key string) (tls.Certificate, error) {
	typ, err := st.resolvedType(key)
	if err != nil {
		return tls.Certificate{}, err
	}
	pass, err := st.password(key)
	if err != nil {
		return tls.Certificate{}, err
	}
	data, err := os.ReadFile(st.Location)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%w: %s.location: %w", ErrStore, key, err)
	}
	var chain []*x509.Certificate
	var priv crypto.PrivateKey
	switch typ {
	case "PEM":
		chain, priv, err = pemKeyStore(data, pass)
	case "PKCS12":
		var leaf *x509.Certificate
		var cas []*x509.Certificate
		priv, leaf, cas, err = pkcs12.DecodeChain(data, pass)
		if err == nil {
			chain = append([]*x509.Certificate{leaf}, cas...)
		}
	case "JKS":
		chain, priv, err = jksKeyStore(data, pass)
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%w: %s %s (%s): %w", ErrStore, key, st.Location, typ, err)
	}
	cert := tls.Certificate{PrivateKey: priv, Leaf: chain[0]}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	if err := keyMatches(chain[0], priv); err != nil {
		return tls.Certificate{}, fmt.Errorf("%w: %s %s: %w", ErrStore, key, st.Location, err)
	}
	return cert, nil
}

// LoadTrustStore reads the CA certificates client certificates are verified against.
func LoadTrustStore(st Store, key string) (*x509.CertPool, error) {
	typ, err := st.resolvedType(key)
	if err != nil {
		return nil, err
	}
	pass, err := st.password(key)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(st.Location)
	if err != nil {
		return nil, fmt.Errorf("%w: %s.location: %w", ErrStore, key, err)
	}
	var certs []*x509.Certificate
	switch typ {
	case "PEM":
		certs, err = pemCerts(data)
	case "PKCS12":
		certs, err = pkcs12.DecodeTrustStore(data, pass)
		if err != nil {
			// A store of key entries (keytool -genkeypair): Java trusts their certificates too.
			if _, leaf, cas, err2 := pkcs12.DecodeChain(data, pass); err2 == nil {
				certs, err = append([]*x509.Certificate{leaf}, cas...), nil
			}
		}
	case "JKS":
		certs, err = jksTrustStore(data, pass)
	}
	if err == nil && len(certs) == 0 {
		err = fmt.Errorf("no certificates in it")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s (%s): %w", ErrStore, key, st.Location, typ, err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// pemKeyStore reads a PEM key store as ZooKeeper's PemReader: the private key (PKCS#8, or the
// PKCS#1 and SEC 1 forms openssl writes) and the certificates, leaf first.
func pemKeyStore(data []byte, pass string) ([]*x509.Certificate, crypto.PrivateKey, error) {
	var chain []*x509.Certificate
	var priv crypto.PrivateKey
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch b.Type {
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, nil, err
			}
			chain = append(chain, c)
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			if priv != nil {
				return nil, nil, fmt.Errorf("more than one private key")
			}
			k, err := parseKey(b)
			if err != nil {
				return nil, nil, err
			}
			priv = k
		case "ENCRYPTED PRIVATE KEY":
			if pass == "" {
				return nil, nil, fmt.Errorf("the private key is encrypted and no password is set")
			}
			return nil, nil, fmt.Errorf("encrypted PKCS#8 private keys are not supported; use a PKCS12 or JKS store, or an unencrypted PEM key")
		}
	}
	switch {
	case priv == nil:
		return nil, nil, fmt.Errorf("no private key in it")
	case len(chain) == 0:
		return nil, nil, fmt.Errorf("no certificate in it")
	}
	return chain, priv, nil
}

func parseKey(b *pem.Block) (crypto.PrivateKey, error) {
	switch b.Type {
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(b.Bytes)
	}
	return x509.ParsePKCS8PrivateKey(b.Bytes)
}

func pemCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return out, nil
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}

func loadJKS(data []byte, pass string) (keystore.KeyStore, error) {
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(data), []byte(pass)); err != nil {
		return ks, err
	}
	return ks, nil
}

// jksKeyStore takes the first private key entry (in alias order), decrypted with the store
// password, as Java's KeyManagerFactory.init(store, password) does.
func jksKeyStore(data []byte, pass string) ([]*x509.Certificate, crypto.PrivateKey, error) {
	ks, err := loadJKS(data, pass)
	if err != nil {
		return nil, nil, err
	}
	for _, alias := range ks.Aliases() {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		e, err := ks.GetPrivateKeyEntry(alias, []byte(pass))
		if err != nil {
			return nil, nil, fmt.Errorf("key entry %q: %w", alias, err)
		}
		priv, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
		if err != nil {
			return nil, nil, fmt.Errorf("key entry %q: %w", alias, err)
		}
		var chain []*x509.Certificate
		for _, c := range e.CertificateChain {
			cert, err := x509.ParseCertificate(c.Content)
			if err != nil {
				return nil, nil, fmt.Errorf("key entry %q: %w", alias, err)
			}
			chain = append(chain, cert)
		}
		if len(chain) == 0 {
			return nil, nil, fmt.Errorf("key entry %q has no certificate", alias)
		}
		return chain, priv, nil
	}
	return nil, nil, fmt.Errorf("no private key entry in it")
}

// jksTrustStore returns the trusted certificate entries and the leaf certificate of each key
// entry (Java's TrustStoreUtil trusts both).
func jksTrustStore(data []byte, pass string) ([]*x509.Certificate, error) {
	ks, err := loadJKS(data, pass)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for _, alias := range ks.Aliases() {
		var der []byte
		if ks.IsTrustedCertificateEntry(alias) {
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return nil, err
			}
			der = e.Certificate.Content
		} else if chain, err := ks.GetPrivateKeyEntryCertificateChain(alias); err == nil && len(chain) > 0 {
			der = chain[0].Content
		}
		if der == nil {
			continue
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", alias, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// keyMatches checks that the private key belongs to the leaf certificate.
func keyMatches(leaf *x509.Certificate, priv crypto.PrivateKey) error {
	type publicKeyer interface{ Public() crypto.PublicKey }
	pk, ok := priv.(publicKeyer)
	if !ok {
		return fmt.Errorf("unsupported private key type %T", priv)
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	if eq, ok := pk.Public().(equaler); !ok || !eq.Equal(leaf.PublicKey) {
		return fmt.Errorf("the private key does not match the certificate %q", leaf.Subject.String())
	}
	return nil
}
