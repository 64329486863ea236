// Package session owns ZooKeeper sessions for the whole ensemble.
//
// The session table lives in its own Raft group (the meta shard) as a small in-memory state
// machine (Table): every server holds a replica, so any server can check a reconnecting
// client's password locally. The table changes only through applied commands:
//
//   - Create: a server registers a new session (id, password, negotiated timeout, owner server).
//   - Renew (and the older Touch): a server reports, in one command per tickTime/4, the sessions
//     whose clients it heard, each with the age of that activity.
//   - TakeOver: a reconnecting client's new server becomes the owner (plain renewals never
//     change the owner). Its committed result, not the local replica, says whether the session
//     still lives.
//   - Close / Expire: the session ends (client closeSession, or expiry decided by the leader).
//     From then on no server accepts requests for it.
//   - Cleaned: every data shard removed the session's ephemerals; the entry is dropped.
//   - Announce / SetLevel: the ensemble's format level (package format): the level each
//     server's binary reads, and the active level, raised once every member reads it.
//
// Expiry is decided once: only the server that leads the meta shard runs the expiry check, on
// its own monotonic clock against the local time each replica applied the session's last
// renewal minus its age (Table.Seen), and proposes Expire with the index it decided on; apply
// refuses it if a renewal was applied after that index. A new leader first grants every
// session a full timeout from the moment it became leader, so a failover does not expire
// sessions in a storm.
//
// The Manager also keeps each served session's lease basis (Heard): when its client was last
// heard, by a renewal that committed with the session alive and owned here. The client port
// sends nothing on a session whose lease lapsed (docs/design.md §4, server/lease.go).
//
// Ephemeral cleanup is at-least-once and idempotent: the meta leader proposes OpCloseSession to
// every data shard for each closing session, in two rounds (tombstone everywhere, then delete
// the ephemerals), until all have applied it, then proposes Cleaned. A client's own close does
// the same from the server it is connected to (one round when its connection is the session's
// latest owner, only on the shards the session wrote to when that connection created it:
// Written; from format level 7 that round, its ops conditional on the connection's ownership
// epoch, runs at the same time as the meta close: closeOwned), answers once the shards applied
// it and proposes Cleaned in the background; a
// Cleaned that never lands leaves the session closing for the meta leader, which cleans up a
// session closing for closingGrace by its clock (at once for one it expired itself). A data
// shard refuses every later write of a session it holds a tombstone of, so an ephemeral never
// outlives its session and no write of the session lands after any of its ephemerals is gone.
//
// Apply is deterministic: no clock reads; times come stamped in commands.
package session
