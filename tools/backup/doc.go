// Package backup owns `corral backup` and `corral restore` (docs/operations.md, "Backup and
// restore").
//
// Backup (backup.go) downloads GET /backup from a server's admin port (one consistent cut of
// every data shard, docs/design.md "Backup: one consistent cut") into a file, checking every
// record, the count and the SHA-256 as the bytes arrive (tools/backupfile), with progress; the
// file appears under its name only once complete and checked.
//
// Restore (restore.go) checks a file and uploads it to a server's POST /restore (cluster,
// restore.go), which checks it again as it arrives, refuses a target that holds any znode
// besides /zookeeper or a quota, creates every znode through its own client port and sets the
// ACLs and stats; Restore prints the progress lines the server sends back and returns its last
// one. The restore itself happens on the server, so the command and a plain HTTP POST do the
// same. Both read the file as a stream: memory does not grow with it.
package backup
