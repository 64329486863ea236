// Package tlsconf owns TLS on the secure client port and between servers: the zoo.cfg keys
// Apache ZooKeeper 3.8 reads for them (Settings; ssl.* for the client port, ssl.quorum.* and
// sslQuorum for the quorum, quorum.go), the loading of its key and trust stores (PEM, PKCS12, JKS), the
// *tls.Config built from them, the reloading of that configuration when the files change on disk
// (Source), and the listener that completes each connection's handshake and derives the
// connection's x509 identity (Listener).
//
// What it matches in ZooKeeper (docs/compatibility.md lists the differences):
//   - keys: ZooKeeper's QuorumPeerConfig turns every zoo.cfg key it does not parse itself into the
//     system property "zookeeper.<key>", and ClientX509Util reads "zookeeper.ssl.*". So zoo.cfg
//     says ssl.keyStore.location, not zookeeper.ssl.keyStore.location (ZooKeeper ignores the
//     latter in zoo.cfg, and so does Corral: it is an unknown key);
//   - defaults: ssl.clientAuth=need, ssl.protocol=TLSv1.2 with only that protocol enabled, the
//     ECDHE AES-GCM and AES-CBC cipher suites of X509Util's Java 9+ list (those Go implements);
//   - store types from ssl.*Store.type or, when absent, from the file name (.pem, .p12, .jks;
//     .pfx is taken as PKCS12 too, which ZooKeeper 3.8 refuses);
//   - identities: with ssl.clientAuth need or want, a client whose certificate chain verified
//     gets the id x509:<subject> (X500Principal.getName(), RFC 2253, see RFC2253Name), plus
//     super:<subject> when the subject equals X509AuthenticationProvider.superUser, as
//     X509AuthenticationProvider does. ZooKeeper registers that provider itself when
//     secureClientPort is set (QuorumPeerConfig.configureSSLAuth), so does Corral.
//
// Invariants: a Source always holds a complete, valid configuration; a reload that fails (an
// unreadable or inconsistent file) keeps the previous one and logs why. A connection uses the
// configuration current when its handshake starts. Every goroutine of this package has an
// owner: Source.Run runs until its context ends, a Listener's accept and handshake goroutines
// end when Close returns.
//
// Quorum settings (QuorumDefaults) parse the ssl.quorum.* keys with the client port's rules and
// name those keys in their errors; with ssl.quorum.hostnameVerification their Listener also
// checks that a dialling peer's certificate names the peer's IP address or a reverse DNS name
// of it (ssl.quorum.allowReverseDnsLookup), as ZooKeeper's ZKTrustManager does for quorum
// peers; their Source also gives the configuration for dialling a
// peer (ClientConfig: this server's certificate, the trust store as roots) and for an HTTPS
// port (HTTPSConfig, the admin port with admin.forceHttps or admin.portUnification). Their
// Listener logs as "quorum TLS". UnifiedListener serves TLS and plaintext on one port (the admin
// port with admin.portUnification), telling them apart by each connection's first byte (0x16
// starts a TLS record); its detection goroutines end when Close returns.
// A connection closed before its handshake began (a reachability probe) is logged at debug
// level only.
//
// Callers: cluster parses zoo.cfg keys with Settings.Set, builds a Source at start, runs it
// under the server's context and serves the server's client port on a Listener (merged with the
// plaintext port by Merge when both are configured). server gives a connection the identities
// its net.Conn reports (PeerIDs). raftnet serves and dials Raft links with the quorum Source.
package tlsconf
