package cluster

import (
	"sync"
	"sync/atomic"

	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// tailCache keeps the newest Raft log entries of every replica in memory, so that a leader
// catching up a follower (a restarted server, one back from a partition) reads them from memory
// instead of from the log store.
//
// Why: dragonboat reads entries that are no longer in its in-memory log (it drops them once
// applied) from the log store, on the shard's step worker, while it builds each replicate
// message. tan, the log store, opens the log file, seeks and unmarshals one saved update per
// read, and one update holds the few entries of one Raft round; a follower a few thousand
// entries behind cost hundreds of file opens per message, and a message per heartbeat
// response. The leader's step worker then spent seconds in those reads: the shard's other
// followers heard no heartbeat (dragonboat logged "had 560 LocalTick msgs in one batch": 5.6 s
// without a step), elected another leader, and every request on the shard waited
// (docs/reliability.md, rolling restarts).
//
// Invariant: the cache holds, per replica, a run of consecutive entries equal to the log's
// entries at those indexes; a read is served from it only when the whole range [low, high) is
// in that run, and from the log store otherwise. It follows every change of the log: saved
// entries are appended (an entry saved at an index drops every cached entry at and after that
// index first, as the log does), a saved snapshot or an imported one empties it, compaction
// (RemoveEntriesTo) drops the entries it removes, and the oldest entries are dropped past the
// budget (below). Test: TestTailCacheMatchesLogStore (random saves, overwrites and
// compactions against tan itself).
//
// The budget is the server's, over all its replicas, so that the cache costs the same whatever
// the number of shards: past it, the oldest entries of the replica holding the most are dropped
// first (under an even load every replica keeps an equal share; a busy shard keeps more than an
// idle one), and every replica keeps at least its newest entry. Test: TestTailCacheServerBudget.
type tailCache struct {
	raftio.ILogDB
	budget uint64

	mu    sync.Mutex
	tails map[[2]uint64]*tail
	total uint64 // the sum of every tail's bytes

	hits, misses atomic.Uint64 // reads served from memory, and by the log store
}

// tailBudget bounds the cached entries of all of a server's replicas together: a few seconds
// of a busy shard's log.
const tailBudget = 16 << 20

func newTailCache(db raftio.ILogDB, budget uint64) *tailCache {
	return &tailCache{ILogDB: db, budget: budget, tails: map[[2]uint64]*tail{}}
}

// tail is one replica's cached run of entries: ents[i].Index == ents[0].Index+i.
type tail struct {
	ents  []pb.Entry
	bytes uint64
}

func (t *tail) first() uint64 { return t.ents[0].Index }
func (t *tail) last() uint64  { return t.ents[len(t.ents)-1].Index }

// save records entries just saved to the log.
func (t *tail) save(es []pb.Entry) {
	if len(es) == 0 {
		return
	}
	if f := es[0].Index; len(t.ents) > 0 {
		switch {
		case f > t.first() && f <= t.last()+1:
			t.dropFrom(int(f - t.first())) // overwritten from f on, as in the log
		default:
			t.dropFrom(0) // a gap, or everything overwritten: start over
		}
	}
	for _, e := range es {
		t.ents = append(t.ents, e)
		t.bytes += uint64(e.SizeUpperLimit())
	}
}

// dropOldest removes the oldest entries until the tail holds at most keep bytes or only its
// newest entry, and returns the bytes removed.
func (t *tail) dropOldest(keep uint64) uint64 {
	before, n := t.bytes, 0
	for n < len(t.ents)-1 && t.bytes > keep {
		t.bytes -= uint64(t.ents[n].SizeUpperLimit())
		t.ents[n] = pb.Entry{}
		n++
	}
	t.ents = t.ents[n:]
	return before - t.bytes
}

// dropFrom removes ents[i:].
func (t *tail) dropFrom(i int) {
	for j := i; j < len(t.ents); j++ {
		t.bytes -= uint64(t.ents[j].SizeUpperLimit())
		t.ents[j] = pb.Entry{}
	}
	t.ents = t.ents[:i]
}

// dropTo removes every entry with an index at or below index.
func (t *tail) dropTo(index uint64) {
	n := 0
	for n < len(t.ents) && t.ents[n].Index <= index {
		t.bytes -= uint64(t.ents[n].SizeUpperLimit())
		t.ents[n] = pb.Entry{}
		n++
	}
	t.ents = t.ents[n:]
}

// SaveRaftState saves, then caches the saved entries.
func (c *tailCache) SaveRaftState(updates []pb.Update, shardID uint64) error {
	if err := c.ILogDB.SaveRaftState(updates, shardID); err != nil {
		c.mu.Lock()
		for _, u := range updates {
			c.forgetLocked([2]uint64{u.ShardID, u.ReplicaID}) // what the store holds is unknown
		}
		c.mu.Unlock()
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range updates {
		u := &updates[i]
		k := [2]uint64{u.ShardID, u.ReplicaID}
		if !pb.IsEmptySnapshot(u.Snapshot) {
			c.forgetLocked(k)
		}
		if len(u.EntriesToSave) == 0 {
			continue
		}
		t := c.tails[k]
		if t == nil {
			t = &tail{}
			c.tails[k] = t
		}
		before := t.bytes
		t.save(u.EntriesToSave)
		c.total += t.bytes - before
	}
	c.shrinkLocked()
	return nil
}

// shrinkLocked drops the oldest entries of the largest tails until the cache is within its
// budget: the largest tail is cut down to the next largest, or by what is over the budget if
// that is less (by one entry when two are equal), until the total fits. A tail down to its
// newest entry is left alone.
func (c *tailCache) shrinkLocked() {
	for c.total > c.budget {
		var big *tail
		var next uint64 // the second largest tail's bytes, among those that can lose an entry
		for _, t := range c.tails {
			if len(t.ents) < 2 {
				continue
			}
			if big == nil || t.bytes > big.bytes {
				if big != nil {
					next = big.bytes
				}
				big = t
			} else if t.bytes > next {
				next = t.bytes
			}
		}
		if big == nil {
			return // every tail holds only its newest entry
		}
		keep := max(next, big.bytes-min(big.bytes, c.total-c.budget))
		if keep == big.bytes {
			keep-- // equal to the next largest: one entry, then the other's turn
		}
		c.total -= big.dropOldest(keep)
	}
}

// IterateEntries serves [low, high) from memory when all of it is cached, with the log store's
// size rule (entries are added until their total exceeds maxSize, the one that exceeds it
// included; 0 means no limit), and asks the log store otherwise.
func (c *tailCache) IterateEntries(ents []pb.Entry, size uint64, shardID, replicaID, low, high,
	maxSize uint64) ([]pb.Entry, uint64, error) {
	c.mu.Lock()
	t := c.tails[[2]uint64{shardID, replicaID}]
	if t == nil || len(t.ents) == 0 || low >= high || low < t.first() || high-1 > t.last() {
		c.mu.Unlock()
		c.misses.Add(1)
		return c.ILogDB.IterateEntries(ents, size, shardID, replicaID, low, high, maxSize)
	}
	for _, e := range t.ents[low-t.first() : high-t.first()] {
		ents = append(ents, e)
		size += uint64(e.SizeUpperLimit())
		if maxSize > 0 && size > maxSize {
			break
		}
	}
	c.mu.Unlock()
	c.hits.Add(1)
	return ents, size, nil
}

// RemoveEntriesTo compacts the log and drops the removed entries from the cache.
func (c *tailCache) RemoveEntriesTo(shardID, replicaID, index uint64) error {
	err := c.ILogDB.RemoveEntriesTo(shardID, replicaID, index)
	c.mu.Lock()
	if t := c.tails[[2]uint64{shardID, replicaID}]; t != nil {
		before := t.bytes
		t.dropTo(index)
		c.total -= before - t.bytes
	}
	c.mu.Unlock()
	return err
}

// ImportSnapshot replaces the replica's log; its cache starts over.
func (c *tailCache) ImportSnapshot(ss pb.Snapshot, replicaID uint64) error {
	c.forget(ss.ShardID, replicaID)
	return c.ILogDB.ImportSnapshot(ss, replicaID)
}

// RemoveNodeData removes the replica's log; so goes its cache.
func (c *tailCache) RemoveNodeData(shardID, replicaID uint64) error {
	c.forget(shardID, replicaID)
	return c.ILogDB.RemoveNodeData(shardID, replicaID)
}

func (c *tailCache) forget(shardID, replicaID uint64) {
	c.mu.Lock()
	c.forgetLocked([2]uint64{shardID, replicaID})
	c.mu.Unlock()
}

func (c *tailCache) forgetLocked(k [2]uint64) {
	if t := c.tails[k]; t != nil {
		c.total -= t.bytes
		delete(c.tails, k)
	}
}
