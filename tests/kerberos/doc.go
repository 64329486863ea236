// Package kerberos tests Corral's SASL GSSAPI (Kerberos) authentication against real clients
// and a real KDC: an MIT krb5kdc the test starts in a temporary directory (realm EXAMPLE.COM,
// principals zookeeper/localhost and client, each with a keytab), Apache ZooKeeper 3.8 and
// Corral configured from the same JAAS Server section (Krb5LoginModule with the service
// keytab) and krb5.conf, then the Java client (zkCli.sh with a Krb5LoginModule Client
// section) and kazoo (pure-sasl over python3-kerberos) run against each. Both servers must
// give the same results: the client authenticates as sasl:client@EXAMPLE.COM, creates a node
// with that ACL and reads it back; a client without SASL is refused it; a DIGEST-MD5 client
// fails (a server with a Kerberos login runs GSSAPI only); kerberos.remove*FromPrincipal and
// superUser shorten and name ids in the default realm alike; a garbage and an oversize sasl
// token are answered AUTHFAILED and close their own connection. TestKerberosThreeServers runs
// Corral alone as a 3-server ensemble: a node created by a Kerberos session through one server
// with a sasl ACL is refused to a session without SASL through another and read by a Kerberos
// session through the third. Tests skip with -short; without
// the MIT KDC, zkCli or Java they fail saying what to install.
package kerberos
