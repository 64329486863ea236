// Package zkimport copies a ZooKeeper tree into Corral: `corral import`.
//
// What it owns: reading a tree from a running ZooKeeper-compatible ensemble (Apache ZooKeeper,
// or Corral itself) over the client protocol, or from a stopped ZooKeeper's data directory
// through tools/zkdata (source.go), writing it into Corral (sink.go) and the run that ties
// them together with progress and a summary (import.go).
//
// The copy keeps every persistent znode's data (null and empty apart), its ACL, and its stat
// as the source reports it: version, aversion, cversion (so the next sequential child gets the
// same name on both), czxid, mzxid, pzxid, ctime and mtime. Ephemeral znodes belong to the
// source's sessions and are never copied; /zookeeper (ZooKeeper's own subtree) and the root
// znode itself (its ACL and stat stay the target's) are never copied. Nodes are created level by level (every parent before its children), many requests
// in flight, with an open ACL; once the whole tree exists, each node gets its source ACL and
// then its stat, which Corral's admin endpoint POST /import/stats sets verbatim
// (shard.OpSetStat, format level 3). The client protocol cannot tell a container or TTL
// znode from a persistent one (ZooKeeper reports ephemeralOwner 0 for both), so a live import
// creates them persistent; an import from a data directory knows their types and creates them
// as such.
package zkimport
