// Package backupfile owns the file format of `corral backup` (docs/operations.md, "Backup and
// restore"): its encoding and decoding, record by record, with the checks that let a restore
// refuse a truncated or corrupt file before it writes anything.
//
// A file is the magic "CORRALBK", a format version byte, then records. Every record is
//
//	u32 length (big endian, of kind and payload) | u8 kind | payload | u32 CRC-32C of kind and payload
//
// and the kinds come in this order: one header ('H', JSON: when and where the backup was taken,
// each shard's zxid at the cut), one node record ('N') per znode in key order (every parent
// before its children), and one trailer ('E': the number of nodes, the largest zxid they carry,
// and the SHA-256 of every byte of the file before the trailer). A node record holds the path,
// the data (null kept apart from empty), the type (persistent, container or TTL with its TTL),
// the stat fields a restore sets (czxid, mzxid, pzxid, ctime, mtime, version, the stored cversion,
// aversion) and the ACL; numChildren and dataLength follow from the tree, and ephemerals are
// never in a backup.
//
// Writer and Reader stream: neither holds more than one record. The Reader reports the first
// problem as a *FormatError naming the byte offset of the record it found it in.
//
// Users: cluster writes files (GET /backup) and reads them (POST /restore); tools/backup
// checks them.
package backupfile
