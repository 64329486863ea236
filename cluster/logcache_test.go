package cluster

import (
	"bytes"
	"math"
	"math/rand"
	"reflect"
	"testing"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/plugin/tan"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// TestTailCacheMatchesLogStore drives tan and a tailCache over it with the same random history
// of one replica's log — appends, overwrites of a suffix (a new leader's entries), gaps after a
// snapshot, compactions — and checks after every step that any range read through the cache
// returns what tan alone returns. A small budget makes the cache drop old entries often, so
// reads cross its lower edge.
func TestTailCacheMatchesLogStore(t *testing.T) {
	nhc := config.NodeHostConfig{NodeHostDir: t.TempDir(), RTTMillisecond: 10, RaftAddress: "127.0.0.1:1",
		Expert: config.ExpertConfig{LogDB: config.GetSmallMemLogDBConfig()}}
	if err := nhc.Prepare(); err != nil {
		t.Fatal(err)
	}
	store, err := tan.Factory.Create(nhc, func(config.LogDBInfo) {}, []string{t.TempDir()}, []string{t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cache := newTailCache(store, 4<<10)
	const shard, replica = 3, 1
	rng := rand.New(rand.NewSource(7))
	last, term, compacted := uint64(0), uint64(1), uint64(0)
	entries := func(from, n uint64) []pb.Entry {
		es := make([]pb.Entry, n)
		for i := range es {
			cmd := make([]byte, rng.Intn(300))
			rng.Read(cmd)
			es[i] = pb.Entry{Index: from + uint64(i), Term: term, Cmd: cmd}
		}
		return es
	}
	hits := uint64(0)
	for step := 0; step < 600; step++ {
		var u pb.Update
		switch r := rng.Intn(20); {
		case r < 14 || last == compacted: // append
			u = pb.Update{EntriesToSave: entries(last+1, uint64(1+rng.Intn(8)))}
		case r < 18: // a new leader overwrites a suffix
			term++
			from := last - uint64(rng.Intn(int(min(last-compacted, 6))))
			if from <= compacted {
				from = compacted + 1
			}
			u = pb.Update{EntriesToSave: entries(from, uint64(1+rng.Intn(5)))}
		case r < 19: // compaction
			to := compacted + uint64(rng.Intn(int(last-compacted)+1))
			if err := cache.RemoveEntriesTo(shard, replica, to); err != nil {
				t.Fatal(err)
			}
			compacted = max(compacted, to)
			continue
		default: // an installed snapshot moves the log past a gap
			term++
			idx := last + uint64(1+rng.Intn(10))
			u = pb.Update{Snapshot: pb.Snapshot{Index: idx, Term: term, ShardID: shard,
				Membership: pb.Membership{Addresses: map[uint64]string{1: "a"}}, Filepath: "f", FileSize: 1}}
			last, compacted = idx, idx
			u.State = pb.State{Term: term, Commit: idx}
		}
		u.ShardID, u.ReplicaID = shard, replica
		if len(u.EntriesToSave) > 0 {
			last = u.EntriesToSave[len(u.EntriesToSave)-1].Index
			u.State = pb.State{Term: term, Commit: compacted}
		}
		if err := cache.SaveRaftState([]pb.Update{u}, 1); err != nil {
			t.Fatal(err)
		}
		h0 := cache.hits.Load()
		for q := 0; q < 10; q++ {
			low := compacted + 1 + uint64(rng.Intn(int(last-compacted)+1))
			high := low + uint64(rng.Intn(int(last-low)+2))
			maxSize := uint64(rng.Intn(2000))
			want, wsz, werr := store.IterateEntries(nil, 0, shard, replica, low, high, maxSize)
			got, gsz, gerr := cache.IterateEntries(nil, 0, shard, replica, low, high, maxSize)
			if werr != nil || gerr != nil {
				t.Fatalf("step %d [%d,%d): store %v, cache %v", step, low, high, werr, gerr)
			}
			if len(want) == 0 && len(got) == 0 {
				continue
			}
			if !sameEntries(got, want) || gsz != wsz {
				t.Fatalf("step %d [%d,%d) max %d: cache gave %d entries (%d bytes), store %d (%d bytes)",
					step, low, high, maxSize, len(got), gsz, len(want), wsz)
			}
		}
		hits += cache.hits.Load() - h0
	}
	if hits < 1000 || cache.misses.Load() < 100 {
		t.Fatalf("the reads did not exercise both paths: %d from memory, %d from tan", hits, cache.misses.Load())
	}
	t.Logf("%d reads from memory, %d from tan", hits, cache.misses.Load())
}

// sameEntries compares entries field by field, an empty command equal to a nil one.
func sameEntries(a, b []pb.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !bytes.Equal(x.Cmd, y.Cmd) {
			return false
		}
		x.Cmd, y.Cmd = nil, nil
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// savingOnly is a log store that accepts every save (the budget test needs nothing else).
type savingOnly struct{ raftio.ILogDB }

func (savingOnly) SaveRaftState([]pb.Update, uint64) error { return nil }

// TestTailCacheServerBudget saves random runs of entries for several replicas and checks the
// budget's invariant after every save: the cache's total is the sum of what its tails hold and
// at most the budget (unless every tail is down to its newest entry), every tail is the newest
// run of entries saved for its replica, and, the replicas' loads being alike, no tail holds more
// than another by more than a few saves' worth (eight of the largest entries) once the budget
// is reached.
func TestTailCacheServerBudget(t *testing.T) {
	const budget, replicas = 20 << 10, 5
	cache := newTailCache(savingOnly{}, budget)
	rng := rand.New(rand.NewSource(11))
	saved := make([][]pb.Entry, replicas) // everything saved, per replica
	maxEntry := uint64(0)
	for step := 0; step < 3000; step++ {
		r := rng.Intn(replicas)
		from := uint64(len(saved[r]) + 1)
		es := make([]pb.Entry, 1+rng.Intn(4))
		for i := range es {
			es[i] = pb.Entry{Index: from + uint64(i), Term: 1, Cmd: make([]byte, 50+rng.Intn(400))}
			maxEntry = max(maxEntry, uint64(es[i].SizeUpperLimit()))
		}
		saved[r] = append(saved[r], es...)
		u := pb.Update{ShardID: uint64(r + 1), ReplicaID: 1, EntriesToSave: es}
		if err := cache.SaveRaftState([]pb.Update{u}, 1); err != nil {
			t.Fatal(err)
		}
		sum, multi := uint64(0), false
		lo, hi := uint64(math.MaxUint64), uint64(0)
		for k, tl := range cache.tails {
			b := uint64(0)
			for i, e := range tl.ents {
				b += uint64(e.SizeUpperLimit())
				want := saved[k[0]-1][len(saved[k[0]-1])-len(tl.ents)+i]
				if e.Index != want.Index || len(e.Cmd) != len(want.Cmd) {
					t.Fatalf("step %d: replica %d's tail holds entry %d where the newest saved run has %d", step, k[0], e.Index, want.Index)
				}
			}
			if b != tl.bytes {
				t.Fatalf("step %d: replica %d's tail counts %d bytes, holds %d", step, k[0], tl.bytes, b)
			}
			sum += b
			multi = multi || len(tl.ents) > 1
			lo, hi = min(lo, b), max(hi, b)
		}
		if sum != cache.total {
			t.Fatalf("step %d: total %d, tails hold %d", step, cache.total, sum)
		}
		if sum > budget && multi {
			t.Fatalf("step %d: %d bytes cached over a budget of %d", step, sum, budget)
		}
		if step > 500 && len(cache.tails) == replicas && hi-lo > 2*maxEntry*4 {
			t.Fatalf("step %d: tails of %d and %d bytes: the budget is not shared", step, lo, hi)
		}
	}
	if len(cache.tails) != replicas || cache.total < budget/2 {
		t.Fatalf("%d tails, %d bytes: the cache should hold about its budget", len(cache.tails), cache.total)
	}
}
