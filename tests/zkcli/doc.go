// Package zkcli drives Apache ZooKeeper's command-line client (zkCli.sh from
// the Debian package) through a fixed sequence of commands against a
// ZooKeeper-protocol server and returns a normalised transcript. A correct
// server produces Apache ZooKeeper's transcript; Corral's tests compare the
// two.
//
// All commands run in one zkCli session (so addauth affects later commands),
// fed on stdin; zkCli then runs without JLine and prints no prompts. Because
// zkCli prints nothing that separates one command's output from the next,
// every command is followed by a marker command (`ls` of a node that does not
// exist), whose error line splits the output. stdout and stderr share one
// pipe so their lines stay in order.
//
// Normalisation removes what legitimately differs between runs and servers:
// JVM/SLF4J noise and the asynchronous connection-state WATCHER blocks, the
// run's base path (→ /base), zxids (renamed zxid-1, zxid-2, ... in order of
// first appearance, so equal zxids stay equal), times, session ids (renamed
// session-1, ...), loopback ports, and the order of child lists (ZooKeeper
// does not define it) and of whoami entries.
package zkcli
