// Package quorumtls holds the end-to-end tests of TLS between servers (sslQuorum,
// ssl.quorum.*; tlsconf/quorum.go and raftnet) and on the admin port (admin.forceHttps,
// admin.portUnification): an ensemble that elects and replicates over mutually authenticated
// links, peers and a whole server without the right certificate refused and logged, the admin
// port over HTTPS only and over HTTP and HTTPS on one port, and
// configuration errors that name their key.
package quorumtls
