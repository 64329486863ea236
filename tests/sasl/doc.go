// Package sasl tests Corral's SASL DIGEST-MD5 authentication against real clients: the Java
// client through zkCli.sh (a JAAS Client section in CLIENT_JVMFLAGS) and kazoo with
// pure-sasl, each run against Apache ZooKeeper 3.8 and against Corral configured from the
// same JAAS file. Both servers must give the same results: bob's session succeeds and reads a
// node whose ACL is sasl:bob, alice is refused it (NOAUTH), a wrong password fails the session
// (AUTHFAILED), and with sessionRequireClientSASLAuth a client without SASL is refused its
// requests. Tests skip, saying what is missing, without zkCli, Java or pure-sasl.
package sasl
