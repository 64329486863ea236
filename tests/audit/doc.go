// Package audit runs one client session against Apache ZooKeeper 3.8 (internal/apachezk,
// audit.enable=true, its audit lines read from the server's log4j file) and against Corral
// (internal/testcluster, two data shards so that top-level creates and multis run as cross-shard
// transactions too) and compares the audit lines: level and message, with session ids
// normalised and timestamps and logger prefixes stripped.
package audit
