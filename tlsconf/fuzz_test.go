package tlsconf

import (
	"testing"

	"software.sslmate.com/src/go-pkcs12"
)

// FuzzStores feeds arbitrary bytes to every key and trust store decoder the secure ports read
// (PEM, JKS, PKCS12) with and without a password: no panic, and a store that decodes to a key
// store has a certificate chain.
func FuzzStores(f *testing.F) {
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), "")
	f.Add([]byte{0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2, 0, 0, 0, 1}, "changeit") // a JKS header
	f.Add([]byte{0x30, 0x82, 0x01, 0x00, 0x02, 0x01, 0x03}, "pass")           // a PKCS12 start
	f.Fuzz(func(t *testing.T, data []byte, pass string) {
		if chain, _, err := pemKeyStore(data, pass); err == nil && len(chain) == 0 {
			t.Fatal("PEM key store without a certificate accepted")
		}
		pemCerts(data)
		if chain, _, err := jksKeyStore(data, pass); err == nil && len(chain) == 0 {
			t.Fatal("JKS key store without a certificate accepted")
		}
		jksTrustStore(data, pass)
		pkcs12.DecodeChain(data, pass)
		pkcs12.DecodeTrustStore(data, pass)
	})
}
