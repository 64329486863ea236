// Package router owns the way from a request to the shard that serves it and back.
//
// It holds the placement (which data shard serves a path: "/" and "/zookeeper" on the root shard,
// every other top-level subtree on the shard its name hashes to among the first start's shards —
// placement.go), the set of data shards, which grows when a shard is added online (shardset.go:
// copy on write, read without locks; the root shard's views carry the records), the per-shard
// published View that lock-free reads use, one Proposer per shard that batches requests from many
// sessions into Raft entries and pipelines them, and one control Proposer per shard for
// cross-shard transaction steps. It coordinates cross-shard transactions (xtxn.go: prepare on
// every participant, commit with one zxid at the anchor first, recovery of a transaction whose
// coordinator died) and owns the order of a session's reads (read.go: Read and ReadRegistered answer a read
// from a view of the shard serving its path that reflects everything the session has seen, read
// again where the subtree lives if it moved; closer.go: the shared ReadIndex rounds those
// catch-ups wait on). It plans where a write goes (plan.go: one shard's proposer or a cross-shard
// transaction) and proposes again a write a subtree move sent back (reroute.go). A Proposer can be
// held (Proposer.Hold: no batch is cut until released, and the hold waits for its batches in
// flight to settle), which the server does before it takes a shard's leadership over
// (cluster/follow.go); holding only delays batches, so no ordering rule changes.
//
// Invariants:
//
//   - A shard's view is published only after the watch events of the batches it reflects were
//     handed to the watch hub (Shard.Applied), so a reply built from a view never overtakes the
//     event of a change it shows.
//
//   - A reader that registers a watch holds the shard's registration lock (Shard.RegisterLock)
//     while it loads the view, reads, registers the watch and queues its reply; Applied holds the
//     same lock exclusively while it triggers watches and publishes. So a watch either sees the
//     change in its read or gets its event, and the event never precedes the registering reply.
//
//   - A proposer's batches carry (proposer id, seq); the shard applies them exactly once and in
//     seq order, so requests submitted to one Proposer are applied in submission order even when
//     a batch has to be proposed again after a timeout or a leader change.
//
//   - A proposal whose outcome is unknown (it timed out and a re-proposal found its results
//     evicted) is reported as ErrOutcomeUnknown; the caller closes the client's connection, as
//     ZooKeeper does when its leader fails with requests in flight.
//
//   - A cross-shard transaction commits at the anchor (the participant with the smallest shard id)
//     before any other participant; the anchor's recorded decision is the outcome recovery applies.
//
//   - A shard handle is visible (Shard, Shards, Lookup) only after its proposers exist, and a
//     mount names only shards already in the set.
//
// Lock order: Shard.regMu before the watch hub's stripes; Router.mountMu (mount table and shard
// set changes) is taken on apply goroutines and calls out only to ShardHooks.Proposers;
// Proposer.mu and closer.mu are leaves.
package router
