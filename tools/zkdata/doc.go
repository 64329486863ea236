// Package zkdata reads the on-disk state of an Apache ZooKeeper 3.8 server (its dataDir and
// dataLogDir) without running ZooKeeper, and returns the data tree as it was at the last
// logged transaction: every znode with its data (null distinct from empty), ACL, stat, kind
// (persistent, ephemeral, container, TTL), and the sessions still alive. It is the reading half
// of `corral import --zk-datadir`.
//
// What it owns: ZooKeeper's persistence formats, read the way ZooKeeper 3.8 reads them when it
// starts (FileTxnSnapLog.restore), and the replay of logged transactions with DataTree's exact
// stat rules. It writes nothing and does not talk to ZooKeeper or to Corral.
//
// # Usage
//
//	tree, err := zkdata.Open("/var/lib/zookeeper", "") // dataDir, dataLogDir ("" = dataDir)
//	if err != nil { ... }                              // a *FormatError names file and offset
//	rep := tree.Report()                               // files used, warnings, digest checks
//	err = tree.Walk(func(n *zkdata.Node) error {       // parents first; "/" and /zookeeper too
//		return importNode(n.Path, n.Data, n.ACL, n.Stat, n.Kind, n.TTL)
//	})
//	for _, s := range tree.Sessions() { ... }          // sessions owning the ephemerals
//
// Read the files of a stopped server, or a copy. A copy taken while ZooKeeper runs works too: a
// snapshot still being written is skipped like a truncated one, and a log cut inside an entry
// ends there. An importer usually skips /zookeeper (ZooKeeper's own quota and config nodes) and
// should refuse a tree whose Report lists DigestMismatches.
//
// # How the files are read
//
// The directories hold version-2/snapshot.<zxid> (optionally .gz or .snappy, per
// zookeeper.snapshot.compression.method) and version-2/log.<zxid>, the zxid in hex.
//
//   - Snapshot choice (FileSnap.deserialize, SnapStream.isValidSnapshot): the newest of up to 100
//     snapshots that load without error; a plain one must end with the seal's "/", a compressed
//     one start with gzip's or snappy-java's magic. A snapshot that is cut short or fails its
//     Adler-32 is skipped (Report.Skipped) and the one before it is used with more of the log.
//   - Snapshot content (SerializeUtils.deserializeSnapshot, DataTree.deserialize,
//     ReferenceCountedACLCache): a FileHeader ("ZKSN"), the sessions with their timeouts, the
//     ACL map (znodes refer to ACL lists by number; -1 is world:anyone:cdrwa), the znodes in
//     depth-first order with their data, ACL number and persisted stat, the path "/" to end,
//     a seal (the Adler-32 of all bytes before it, then "/"), and since 3.6 the tree digest
//     (ZxidDigest) with a second seal.
//   - Logs (FileTxnLog, Util.readTxnBytes): a FileHeader ("ZKLG"), then entries of Adler-32,
//     length, bytes and the byte 'B'. The logs read are the one that starts before the
//     snapshot's zxid and all later ones (FileTxnIterator); entries up to the snapshot's zxid are
//     skipped, all later ones applied. A log ends quietly, as ZooKeeper ends it, at a zero or
//     null length (the zeros it preallocates files with), where the file ends inside an entry,
//     or at an entry not followed by 'B'; reading goes on with the next log (Report.Logs says
//     where each stopped, and whether non-zero bytes follow). A bad checksum, an impossible
//     length, an entry that does not decode, a zxid that goes back or a gap inside an epoch
//     is an error naming the file and the entry's offset.
//   - Transactions (SerializeUtils.deserializeTxn, zookeeper.jute): a TxnHeader then CreateTxn
//     (create, create2; CreateTxnV0 without parentCVersion is accepted), CreateContainerTxn,
//     CreateTTLTxn, DeleteTxn (delete, deleteContainer), SetDataTxn (setData, reconfig),
//     SetACLTxn, CreateSessionTxn, CloseSessionTxn (or none, before 3.6), ErrorTxn, MultiTxn
//     (sub-transactions create*, delete*, setData, check, error), and, since 3.6, a TxnDigest.
//     A top-level check (which ZooKeeper 3.8 cannot read back) is accepted as the no-op it is.
//   - Replay (DataTree.processTxn, FileTxnSnapLog.processTransaction): a snapshot is fuzzy (it
//     is written while transactions are applied), so replayed transactions may find their work
//     done; their NONODE/NODEEXISTS errors are ignored, a create that finds its znode moves the
//     parent's cversion and pzxid on, cversion and pzxid never move back. A multi with an error
//     sub-transaction changes nothing. closeSession deletes the paths it lists and the session's
//     other ephemerals. At the end, ephemerals of sessions that are not alive are deleted with
//     the last zxid, as ZooKeeperServer.loadData does.
//   - Stats (DataNode.copyStat): ZooKeeper persists cversion as the number of child creations;
//     clients see 2×that − numChildren (creations plus deletions). A container's
//     ephemeralOwner is math.MinInt64 and a TTL node's 0xff<<56 | ttl on disk; clients see 0.
//   - Digests (DigestCalculator, NodeHashMapImpl, DataTree.compareSnapshotDigests): the tree
//     digest, a sum of CRC-32s over each znode's path, data and persisted stat outside
//     /zookeeper/, is kept during the replay and compared with the snapshot's digest when the
//     replay reaches its zxid, then with the digest logged with every transaction. ZooKeeper
//     stores a snapshot's digest while it may be applying the next transaction, so a mismatch
//     there only counts if no later digest matches (see digestCheck).
//
// # Limits
//
// TTL nodes are recognized as with zookeeper.extendedTypesEnabled=true (which TTL nodes need);
// the zookeeper.emulate353TTLNodes encoding is not. The quota statistics under
// /zookeeper/quota are as last stored: ZooKeeper recomputes them in memory. Buffer lengths are
// not held to jute.maxbuffer, which the files do not record.
//
// Where ZooKeeper would go on with a tree it cannot vouch for, Open stops with an error: a gap
// in the zxids inside an epoch (a log cut short before a later log, or logs removed), a zxid
// that goes back, a multi sub-transaction that does not decode (ZooKeeper drops the rest of the
// multi), a snapshot listing a znode twice. A log shorter than its header, which ZooKeeper
// refuses to start with, is read as empty.
//
// Memory: the tree is held in memory, as ZooKeeper holds it; node data read from a log shares
// memory with its log entry, and ACL lists are shared between znodes.
package zkdata
