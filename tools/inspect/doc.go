// Package inspect looks into a stopped Corral server's data directory without changing it
// (`corral inspect`, docs/operations.md), as ZooKeeper's zkSnapShotToolkit and zkTxnLogToolkit
// do for ZooKeeper's.
//
// What it owns:
//
//   - Finding the pieces (layout.go): dataDir and dataLogDir (directly or from zoo.cfg), the
//     myid file, dragonboat's NodeHost directory and one pebble store per data shard replica
//     under <dataDir>/corral/shards/<id> (docs/storage.md).
//   - Refusing a running server (lock.go): dragonboat and pebble hold POSIX record locks
//     (fcntl F_SETLK) on their LOCK files while a server runs; inspect asks the kernel who holds
//     them (F_GETLK, on a file opened read-only) and refuses with "stop the server first".
//   - Reading without writing (lock.go, store.go): pebble is opened with ReadOnly on a file
//     system wrapper that fails every call that would create, rename or remove a file and takes
//     no lock, so nothing under the directory changes, not even a LOCK file's times. The
//     stores are decoded by shard.StoreReader, the shard package's own codec.
//   - The session table and the format level (meta.go): the meta shard is an in-memory state
//     machine whose state is only in dragonboat's Raft log (tan log files) and snapshots; inspect
//     reads its latest snapshot and the committed log entries after it, read-only, and applies
//     them to a session.Table, the server's own code.
//   - The report (report.go) and the JSON-lines dump of a subtree (dump.go).
//
// Invariant: nothing here opens a file under the inspected directories for writing.
package inspect
