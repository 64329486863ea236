// Package linearize records what ZooKeeper clients did and checks it: a concurrent-safe history
// recorder, a porcupine model of getData/setData/create/delete on a set of znodes (stat
// versions and zxids included), and named validators for the guarantees a linearizability
// check alone explains badly. It is test infrastructure, in the style of etcd's
// tests/robustness (model/deterministic.go, validate/*); tests/fault drives it against a Corral
// ensemble while servers are stopped and restarted.
//
// # Recording
//
// A client calls Recorder.Begin just before it sends a request and Pending.End just after the
// reply, with what it was told (an Output). Times come from one monotonic clock per Recorder.
// When the client cannot know whether the request took effect — the connection was lost with
// the request in flight, the server timed out, the reply never came — it calls Pending.Unknown
// (or End with Result Unknown): the operation is recorded as maybe applied, with an open return
// time (Open, porcupine's +inf) and no output. The checker may then place it anywhere after its
// call, including after every other operation, which is the same as "never applied". This is
// the ambiguity hashicorp/raft documents for a timed-out Apply, and the reason a test must
// never record a lost write as failed: Corral re-proposes a batch after a leader change, so a
// write whose client saw CONNECTIONLOSS can still be applied seconds later. A request the
// client certainly never sent (go-zookeeper's ErrNoServer for requests still queued while it had
// no connection) is recorded with Result Failed and carries no information.
// A Pending that is never ended (its goroutine was abandoned) appears in History as unknown.
//
// # What is checked for linearizability, and why only synced reads
//
// ZooKeeper's writes are linearizable; its reads are not: a server answers getData from its own
// replica, which may lag the leader, so a plain read is only sequentially consistent (a session
// never sees older state than it has seen, and sees its own writes). Feeding plain reads to a
// linearizability checker would report violations that ZooKeeper allows. ZooKeeper's documented
// way to get a linearizable read is sync followed by the read on the same session; Corral's
// sync is a Raft ReadIndex on the path's shard, and the read that follows on the connection
// waits for sync's reply, so it observes every write that completed before the sync was sent.
// So a client that wants a read checked issues sync then getData and records the pair as one
// operation (Input.Synced), from before sync to after getData; its linearization point lies in
// that interval. Check gives porcupine every write and every synced read with a definite
// outcome; plain reads, reads with an unknown outcome and Failed operations are left out of the
// porcupine check. Plain reads are still checked for what ZooKeeper does promise them, by
// ValidateReadsNeverGoBack.
//
// # The model
//
// Model is partitioned by path (porcupine checks each znode on its own, which is exact because
// every operation touches one znode). The per-path state is the znode's existence, data, version,
// and what is known of its czxid and mzxid. Beyond data and version the model checks that zxids
// agree with the linearization: a read returns the stat of the state it is placed after, and
// every write's zxid is larger than those of the writes placed before it on the same znode.
// A zxid the history does not reveal (create returns no stat in go-zookeeper; an unknown-outcome
// write has none) is learned from the next read, subject to the same ordering bounds. Paths are
// assumed to have existing parents (create never answers NONODE) and no children (delete never
// answers NOTEMPTY).
//
// # Validators
//
//   - ValidateNoLostWrites (ErrLostAcknowledgedWrite): every acknowledged create, setData and
//     delete is reflected by every later synced read of its path, in particular by the final
//     reads a test makes of every key on every server; a key that was written needs a final read
//     (ErrNoFinalRead). Writes are identified by their data, which must be unique per path.
//   - ValidateReadsNeverGoBack (ErrReadWentBack): within one session, the (czxid, version, mzxid)
//     observed for a znode — by any read, synced or not, and by the session's own setData
//     replies — never decreases. This is ZooKeeper's sequential consistency for a session's
//     reads, checked per znode, across reconnects of the session to a restarted server.
//
// Validate runs both; Check runs porcupine and, when the history is not linearizable (or the
// check timed out), writes porcupine's HTML visualization to a file whose path is in the
// returned CheckInfo.
package linearize
