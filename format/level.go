package format

import "fmt"

// Level numbers a set of encodings; each level adds to the one below it.
type Level uint32

// The levels. Adding one: give it the next number, say here what it adds, raise Supported (supported.go), and
// write the new encoding only where the session table's Level() is at least it.
const (
	// Level1 is the first level: data shard batches up to version 3 (SessionFence flag), the
	// session table's Renew, Expire, Announce and SetLevel commands, its version-3 snapshot.
	Level1 Level = 1
	// Level2 adds session ownership epochs (docs/design.md §4): data shard batches whose ops
	// carry the epoch of the session's owner (batch flag Epochs) and the OpSessionOwner op that
	// records a new owner's epoch on a shard.
	Level2 Level = 2
	// Level3 adds OpSetStat, which overwrites a znode's stat fields (an operator's import or
	// restore, shard/setstat.go).
	Level3 Level = 3
	// Level4 adds group transactions (docs/design.md §8): a cross-shard transaction prepare
	// (version 3) whose ops succeed or fail one by one, a session's pipelined writes across
	// shards committed together.
	Level4 Level = 4
	// LevelQuota adds ZooKeeper's quota accounting (docs/design.md "Quotas"): data shard
	// batches and cross-shard prepares that say how their writes treat /zookeeper/quota (batch
	// flags QuotaCount and QuotaEnforce, TxnPrepare versions 4 and 5), and the placement of
	// /zookeeper/quota/<path> on the shard that serves <path>. Below it no replica counts, so
	// replicas of different binaries never disagree about a zookeeper_stats node.
	LevelQuota Level = 5
	// LevelCut adds cuts (docs/design.md "Backup: one consistent cut"): a cross-shard
	// transaction prepare (version 6) with no ops that blocks its whole shard while prepared
	// and never commits, which a backup prepares on every data shard; and OpSetStat's root flag
	// (a restore sets the stat of "/", whose stored cversion does not count /zookeeper).
	LevelCut Level = 6
	// LevelCloseOwner adds OpCloseSession's owner-conditional body (shard.CloseSessionIfOwner):
	// a close that deletes nothing and fails with SESSIONMOVED on a shard that records a newer
	// ownership epoch of the session, which lets the session's owner close it on the data
	// shards while its close commits in the session table (docs/design.md §4). A binary below
	// it would take that body for an unconditional close.
	LevelCloseOwner Level = 7
)

func (l Level) String() string { return fmt.Sprintf("level %d", uint32(l)) }

// Next returns the level the ensemble may move to from active, given the servers that are
// members of any shard and the level each announced: the lowest announcement among the members,
// if that is above active. A member that announced nothing holds the ensemble where it is.
func Next(active Level, members []uint64, announced map[uint64]Level) (Level, bool) {
	if len(members) == 0 {
		return active, false
	}
	lowest := Level(0)
	for i, id := range members {
		l, ok := announced[id]
		if !ok {
			return active, false
		}
		if i == 0 || l < lowest {
			lowest = l
		}
	}
	if lowest > active {
		return lowest, true
	}
	return active, false
}
