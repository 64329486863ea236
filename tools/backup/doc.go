// Package backup owns `corral backup` and `corral restore` (docs/operations.md, "Backup and
// restore").
//
// Backup (backup.go) downloads GET /backup from a server's admin port (one consistent cut of
// every data shard, docs/design.md "Backup: one consistent cut") into a file, checking every
// record, the count and the SHA-256 as the bytes arrive (tools/backupfile), with progress; the
// file appears under its name only once complete and checked.
//
// Restore (restore.go) loads a file into an empty ensemble: it checks the whole file first
// (nothing is written for a truncated or corrupt one), refuses a target that holds any znode
// besides /zookeeper or a quota, then creates every znode through the client port in file order (parents
// before children, many requests in flight, the type and data of the backup, an open ACL),
// and reads the file a third time to set each znode's ACL and then its stat through the admin
// port (POST /import/stats, shard.OpSetStat), which also moves every shard's zxid clock past
// the largest restored zxid. Both read the file as a stream: memory does not grow with it.
package backup
