// Package sasl implements the client SASL authentication of ZooKeeper 3.8 for Corral: the
// DIGEST-MD5 (RFC 2831) and GSSAPI (Kerberos V5, RFC 4752 and 4121) server mechanisms as
// Java's SASL servers run them for ZooKeeper, the JAAS login configuration file their users
// and keytab come from, and the ZooKeeper settings around them (authProvider.N,
// enforce.auth.*, sessionRequireClientSASLAuth, allowSaslFailedClients, superUser,
// kerberos.remove*FromPrincipal, the default realm of krb5.conf).
//
// What it owns:
//   - DigestMD5: one connection's exchange. The client's first sasl packet carries an empty
//     token; the server answers with its challenge (realm "zk-sasl-md5", a fresh nonce, qop
//     "auth", charset utf-8, algorithm md5-sess); the client's digest-response is checked
//     against the password of the user it names and answered with rspauth; the exchange is
//     then complete and AuthorizationID names the user as ZooKeeper's
//     SaslServerCallbackHandler does (Kerberos-style name canonicalisation). Only qop "auth"
//     is offered: no integrity or confidentiality layer is negotiated, as with ZooKeeper.
//   - GSSAPI: one connection's Kerberos exchange, when the JAAS server section has a
//     Krb5LoginModule (the server then offers GSSAPI only, as ZooKeeper). The client's
//     initial context token carries its AP-REQ, verified against the keytab with gokrb5 (no
//     KDC contact) and refused when replayed; a client asking for mutual authentication gets
//     the AP-REP and answers with an empty token; the server then sends its security layer
//     offer in a wrap token (layer "auth" only, buffer 65536, as the JDK), and the client's
//     wrapped choice completes the exchange. User is the client principal; tokens over
//     MaxGSSAPIToken or that do not decode fail with ErrGSSMalformed.
//   - ParseJAAS: the JAAS configuration syntax (sections of login modules with options;
//     // and /* */ comments; quoted values), with errors naming the file and line.
//   - Config: the settings, read from zoo.cfg keys and from -D flags in SERVER_JVMFLAGS,
//     and Auth, the immutable result of loading them that every connection shares.
//
// Invariants: an exchange is used by one goroutine (the connection's request goroutine); Auth
// (with the replay cache its GSSAPI exchanges share) is read-only after Load and safe for
// concurrent use. Nothing here touches the network: the
// server package carries tokens in OpSASL (102) packets and adds the identity ("sasl", id)
// to the connection. A failed exchange is an error wrapping one of the Err* sentinels; the
// caller answers AUTHFAILED (or SESSIONCLOSEDREQUIRESASLAUTH when SASL is required) and
// closes the connection, as ZooKeeper does.
//
// Not implemented: the RFC 1964 token formats (DES, RC4 enctypes), integrity and
// confidentiality security layers (ZooKeeper offers neither), auth_to_local rules.
package sasl
