// Package acl implements ZooKeeper 3.8's access-control logic as pure functions: the permission
// check (ZooKeeperServer.checkACL), the normalisation of ACL lists supplied by create and setACL
// (PrepRequestProcessor.fixupACL, including the expansion of the "auth" scheme), the digest
// scheme's id derivation (DigestAuthenticationProvider.generateDigest) and the masking of digest
// ids that getACL applies for callers without ADMIN permission.
//
// Identities: a caller's identities are a []wire.ID collected by the connection layer: the
// implicit ("ip", address) of the connection, one ("digest", "user:hash") per successful digest
// auth packet, ("sasl", id) after a SASL exchange, ("super", "") when the credential matched
// the configured super digest or SASL super user, and ("x509", subject) for a TLS client with a
// certificate.
//
// Authentication providers: this package knows the providers "ip" and "digest" of a ZooKeeper
// server's default configuration, "x509" (a TLS client's certificate subject, added by the
// connection layer; x509.go), which ZooKeeper registers with a secure client port, and "sasl",
// which ZooKeeper has only when authProvider.N names SASLAuthenticationProvider. Corral has all
// of them always, so that ACL validity does not depend on a server's configuration inside Raft
// apply (docs/compatibility.md). Only they (and world:anyone, and the "auth" pseudo-scheme) are
// accepted by Fixup; "auth" expands to the caller's digest, sasl and x509 ids. Check matches an
// ACL entry of any other scheme by equality with the caller's id of that scheme (ZooKeeper would
// find no provider and never match; such entries cannot be created through Fixup). "super" is
// never an ACL scheme in practice: it only appears among a caller's ids, where it grants
// everything.
//
// IP ACLs accept IPv4 and IPv6 (colon form, optional ::, no embedded IPv4, no zone) with the
// parser of current ZooKeeper; early 3.8 releases parsed IPv4 only, so an IPv6 ip ACL that this
// package accepts may be INVALIDACL on such a server.
//
// Nothing here keeps state or does IO; every function is deterministic, so the shard state
// machine calls them inside Raft apply.
package acl
