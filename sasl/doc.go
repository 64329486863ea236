// Package sasl implements the client SASL authentication of ZooKeeper 3.8 for Corral: the
// DIGEST-MD5 server mechanism (RFC 2831) as Java's SASL server runs it for ZooKeeper, the JAAS
// login configuration file its users come from, and the ZooKeeper settings around it
// (authProvider.N, enforce.auth.*, sessionRequireClientSASLAuth, allowSaslFailedClients,
// superUser, kerberos.remove*FromPrincipal).
//
// What it owns:
//   - DigestMD5: one connection's exchange. The client's first sasl packet carries an empty
//     token; the server answers with its challenge (realm "zk-sasl-md5", a fresh nonce, qop
//     "auth", charset utf-8, algorithm md5-sess); the client's digest-response is checked
//     against the password of the user it names and answered with rspauth; the exchange is
//     then complete and AuthorizationID names the user as ZooKeeper's
//     SaslServerCallbackHandler does (Kerberos-style name canonicalisation). Only qop "auth"
//     is offered: no integrity or confidentiality layer is negotiated, as with ZooKeeper.
//   - ParseJAAS: the JAAS configuration syntax (sections of login modules with options;
//     // and /* */ comments; quoted values), with errors naming the file and line.
//   - Config: the settings, read from zoo.cfg keys and from -D flags in SERVER_JVMFLAGS,
//     and Auth, the immutable result of loading them that every connection shares.
//
// Invariants: DigestMD5 is used by one goroutine (the connection's request goroutine); Auth
// is read-only after Load and safe for concurrent use. Nothing here touches the network: the
// server package carries tokens in OpSASL (102) packets and adds the identity ("sasl", id)
// to the connection. A failed exchange is an error wrapping one of the Err* sentinels; the
// caller answers AUTHFAILED (or SESSIONCLOSEDREQUIRESASLAUTH when SASL is required) and
// closes the connection, as ZooKeeper does.
//
// Kerberos (GSSAPI) is not implemented: a Server section whose login module is not
// ZooKeeper's DigestLoginModule is refused at start-up.
package sasl
