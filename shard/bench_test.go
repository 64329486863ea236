package shard

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/corral/corral/wire"
)

// BenchmarkApplySetData: 1 KiB setData ops in batches of 64, as the paper's write workload.
func BenchmarkApplySetData(b *testing.B) {
	s := NewState(StateConfig{OwnsRoot: true})
	var ops []Op
	for i := 0; i < 64; i++ {
		ops = append(ops, opCreate(fmt.Sprintf("/n%d", i), nil, 0))
	}
	s.Apply(batch(1, 1, 0, ops...))
	data := make([]byte, 1024)
	ops = ops[:0]
	for i := 0; i < 64; i++ {
		ops = append(ops, opSet(fmt.Sprintf("/n%d", i), data, -1))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Apply(batch(1, uint64(i+2), 0, ops...))
	}
	b.ReportMetric(float64(b.N*64)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkTreeBytesPerZnode reports the Go heap the in-memory state holds per znode: the live
// heap after a collection, with 200,000 znodes of 100 B created round-robin under 8 top-level
// parents (the load of `corral bench matrix` row 10; 20,000 with -short), minus the live heap
// before, divided by the znodes. It covers the tree (nodes, keys, data, btree), its indexes
// and the proposer table; not Raft, pebble or the server (docs/benchmarks.md, "Memory per
// znode"). Run it once: go test -run '^$' -bench TreeBytesPerZnode -benchtime 1x ./shard/
func BenchmarkTreeBytesPerZnode(b *testing.B) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	data := make([]byte, 100)
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := NewState(StateConfig{OwnsRoot: true})
		var ops []Op
		for p := 0; p < 8; p++ {
			ops = append(ops, opCreate(fmt.Sprintf("/bulk-%d", p), nil, 0))
		}
		seq := uint64(1)
		s.Apply(batch(1, seq, 0, ops...))
		for j := 0; j < n; j += 64 {
			ops = ops[:0]
			for k := j; k < j+64 && k < n; k++ {
				ops = append(ops, opCreate(fmt.Sprintf("/bulk-%d/n-%d", k%8, k), data, 0))
			}
			seq++
			if res, _ := s.Apply(batch(1, seq, 0, ops...)); res.Status != BatchApplied {
				b.Fatalf("batch %d: %v", seq, res.Status)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if got := s.tree.countDescendants(""); got != n+8+3 {
			b.Fatalf("%d nodes, want %d", got, n+8+3)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "B/znode")
		runtime.KeepAlive(s)
	}
}

// BenchmarkGroupPrepareCommit: one participant's side of a session's group (design.md §8):
// a prepare of 4 creates of 1 KiB (with quotas counted, as from format.LevelQuota on) and its
// commit, as rows 8 and 10 of the matrix put on each of 4 shards per group.
func BenchmarkGroupPrepareCommit(b *testing.B) {
	s := NewState(StateConfig{Tag: 1, OwnsRoot: true})
	s.Apply(batch(1, 1, 1000, opCreate("/m-0", nil, 0)))
	data := make([]byte, 1024)
	roles := []TxnRole{RoleFull, RoleFull, RoleFull, RoleFull}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ops := make([]wire.MultiOp, 4)
		for j := range ops {
			ops[j] = mCreate(fmt.Sprintf("/m-0/n-%d-%d", i, j), data, 0)
		}
		id := uint64(i + 1)
		p := TxnPrepare{ID: id, Anchor: 1, Deadline: 1 << 40, Multi: wire.MultiRequest{Ops: ops}, Roles: roles, Group: true,
			Quota: QuotaCount}
		res, _ := s.Apply(ctl(uint64(2*i+1), 2000, prepareOp(p)))
		rep, err := DecodeTxnReply(res.Results[0].Body)
		if err != nil || rep.Outcome != TxnPrepared {
			b.Fatalf("prepare: %+v %v", rep, err)
		}
		res, _ = s.Apply(ctl(uint64(2*i+2), 2000, commitOp(id, rep.Floor<<8|1, 2000)))
		if rep, err := DecodeTxnReply(res.Results[0].Body); err != nil || rep.Outcome != TxnCommitted {
			b.Fatalf("commit: %+v %v", rep, err)
		}
	}
}
