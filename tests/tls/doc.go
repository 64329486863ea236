// Package tls holds the end-to-end tests of the secure client port (secureClientPort, package
// tlsconf): go-zookeeper and kazoo clients over TLS against an in-process server, client
// authentication modes, x509 ACLs and whoAmI, plaintext on the secure port, and certificate
// reload.
package tls
