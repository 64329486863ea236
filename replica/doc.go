// Package replica runs a shard's state (package shard, a pure core) as this server's replica of
// the shard's Raft group: the dragonboat on-disk state machine (Machine: Open, Update, Lookup,
// Sync, PrepareSnapshot, SaveSnapshot, RecoverFromSnapshot, Close; NewMachine, CreateFunc), the
// state's records in pebble, snapshot streams, and read-only access to a stopped replica's store
// (StoreDBDir, NewStoreReader: tools/inspect), and the store's figures (Machine.StoreStats: syncs,
// flushes, compactions, size; exported by package cluster on /metrics).
//
// # Who calls what
//
//   - dragonboat drives Machine. Machine.Update decodes each entry as a shard.Batch, applies it
//     with State.Apply, and calls Listener.Applied once with the new *shard.View and the
//     entries' events. The listener (the router, behind package cluster's audit of
//     session-close deletions: Event.Session) publishes the view to readers and hands the
//     events to the watch hub. The replica publishes nowhere else; Machine.View and Lookup
//     return the same view.
//   - A malformed entry cannot come from Corral's proposers: Update returns
//     shard.ErrMalformedBatch and dragonboat stops the replica (fatal) rather than let replicas
//     diverge.
//
// # The pebble layout
//
// One pebble DB per replica in Config.Dir/db-<generation>, named by the `current` file, holds
// the state's records (shard/records.go) under their keys:
//
//	"mc"                    config (tag, root flag, root), written at creation and checked on open
//	"ma"                    last applied Raft index (uint64 BE)
//	"mz"                    last zxid (int64 BE)
//	"n" + treeKey           node: stub flag, stat fields, raw ephemeralOwner, stored cversion,
//	                        child count, data (null kept distinct from empty), ACL
//	"p" + proposer          proposer's last Seq and batch time
//	"r" + proposer + seq    cached results of one batch
//	"t" + session           closed-session tombstone (close time)
//	"o" + session           session ownership epoch (OpSessionOwner)
//	"mx"                    the prepared transaction, absent when there is none
//	"d" + txn id            decision of a transaction (committed and zxid, record time)
//	"mg"                    the routes of subtrees moved in or out
//	"ms"                    root shard: the data shards added online (AddedShard records)
//
// Update writes nothing to pebble: it changes the in-memory state, which marks what it changed.
// Sync (which dragonboat calls before it compacts the Raft log), PrepareSnapshot and Close write
// the changed records (State.WriteChanges) with "ma" and "mz" in one batch and flush it. The
// Raft log is the durability point and the store has no WAL of its own: dragonboat compacts the
// log only below the index of the last successful Sync, so the log always covers what is not
// written. dragonboat asks for a Sync every corral.snapshotEntries entries; a replica that
// marked Config.SyncDirty nodes calls Config.RequestSync to ask for one sooner, because the
// shard applies nothing while a Sync writes. Snapshots stream a pebble snapshot's records;
// recovery builds a fresh DB directory and swaps `current` atomically.
package replica
