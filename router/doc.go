// Package router owns the way from a request to the shard that serves it and back.
//
// It holds the mount table (which subtree lives on which data shard; today a static table with
// "/" on the first data shard, replicated mount changes arrive with the sharding work), the
// per-shard published View that lock-free reads use, and one Proposer per shard that batches
// requests from many sessions into Raft entries and pipelines them.
//
// Invariants:
//   - A shard's view is published only after the watch events of the batches it reflects were
//     handed to the watch hub (Shard.Applied), so a reply built from a view never overtakes the
//     event of a change it shows.
//   - A reader that registers a watch holds the shard's registration lock (Shard.RegisterLock)
//     while it loads the view, reads, registers the watch and queues its reply; Applied holds the
//     same lock exclusively while it triggers watches and publishes. So a watch either sees the
//     change in its read or gets its event, and the event never precedes the registering reply.
//   - A proposer's batches carry (proposer id, seq); the shard applies them exactly once and in
//     seq order, so requests submitted to one Proposer are applied in submission order even when
//     a batch has to be proposed again after a timeout or a leader change.
//   - A proposal whose outcome is unknown (it timed out and a re-proposal found its results
//     evicted) is reported as ErrOutcomeUnknown; the caller closes the client's connection, as
//     ZooKeeper does when its leader fails with requests in flight.
//
// Lock order: Shard.regMu before the watch hub's stripes; Proposer.mu is a leaf.
package router
