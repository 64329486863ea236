// Package session owns ZooKeeper sessions for the whole ensemble.
//
// The session table lives in its own Raft group (the meta shard) as a small in-memory state
// machine (Table): every server holds a replica, so any server can validate a reconnecting
// client's session id and password locally. The table changes only through applied commands:
//
//   - Create: a server registers a new session (id, password, negotiated timeout, owner server).
//   - Touch: a server reports, in one command per tick, the sessions that showed activity on its
//     connections (and so takes ownership of sessions that moved to it).
//   - Close: the session ends (client closeSession, or expiry decided by the leader). From then
//     on no server accepts requests for it.
//   - Cleaned: every data shard removed the session's ephemerals; the entry is dropped.
//
// Expiry is decided once: only the server that leads the meta shard runs the expiry check, and
// it proposes Close; apply re-checks the deadline with the command's stamped time, so a Touch
// that was applied first wins. A new leader first grants every session a full timeout from the
// moment it became leader, so a failover does not expire sessions in a storm.
//
// Ephemeral cleanup is at-least-once and idempotent: the meta leader proposes OpCloseSession to
// every data shard for each closing session until all have applied it, then proposes Cleaned.
// A data shard records a closed session in a tombstone set and refuses later ephemeral creates
// for it, so an ephemeral never outlives its session even when its create races the expiry.
//
// Apply is deterministic: no clock reads; times come stamped in commands.
package session
