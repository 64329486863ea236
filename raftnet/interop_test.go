package raftnet

import (
	"context"
	"encoding/binary"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/config"
	sm "github.com/lni/dragonboat/v4/statemachine"
)

// counter is a state machine that counts its entries and remembers whether it was restored
// from a snapshot.
type counter struct {
	n         uint64
	recovered *atomic.Bool
}

func (c *counter) Update(e sm.Entry) (sm.Result, error) { c.n++; return sm.Result{Value: c.n}, nil }
func (c *counter) Lookup(any) (any, error)              { return c.n, nil }
func (c *counter) SaveSnapshot(w io.Writer, _ sm.ISnapshotFileCollection, _ <-chan struct{}) error {
	return binary.Write(w, binary.BigEndian, c.n)
}
func (c *counter) RecoverFromSnapshot(r io.Reader, _ []sm.SnapshotFile, _ <-chan struct{}) error {
	c.recovered.Store(true)
	return binary.Read(r, binary.BigEndian, &c.n)
}
func (c *counter) Close() error { return nil }

// TestInteropWithDragonboatTransport runs one Raft group across a NodeHost with dragonboat's
// built-in TCP transport and one with this package's: every entry commits only if both carry
// messages both ways. A third replica, added after the log was compacted, is brought up to
// date with a snapshot streamed from the leader over the other transport. This is what a
// rolling upgrade from a build with dragonboat's transport relies on.
func TestInteropWithDragonboatTransport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three NodeHosts")
	}
	const shard = 1
	addrs := map[uint64]string{1: freeAddr(t), 2: freeAddr(t)}
	recovered := map[uint64]*atomic.Bool{1: {}, 2: {}}
	start := func(id uint64, ours bool, members map[uint64]string, join bool) *dragonboat.NodeHost {
		nhc := config.NodeHostConfig{NodeHostDir: t.TempDir(), RTTMillisecond: 10, RaftAddress: addrs[id]}
		if ours {
			nhc.Expert.TransportFactory = Factory{}
		}
		nh, err := dragonboat.NewNodeHost(nhc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nh.Close)
		cfg := config.Config{ShardID: shard, ReplicaID: id, ElectionRTT: 10, HeartbeatRTT: 1,
			SnapshotEntries: 20, CompactionOverhead: 5}
		create := func(uint64, uint64) sm.IStateMachine { return &counter{recovered: recovered[id]} }
		if err := nh.StartReplica(members, join, create, cfg); err != nil {
			t.Fatal(err)
		}
		return nh
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	members := map[uint64]string{1: addrs[1], 2: addrs[2]}
	hosts := map[uint64]*dragonboat.NodeHost{1: start(1, false, members, false), 2: start(2, true, members, false)}

	total := uint64(0)
	propose := func(n int) {
		for i := 0; i < n; i++ {
			nh := hosts[uint64(1+i%2)]
			for {
				pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := nh.SyncPropose(pctx, nh.GetNoOPSession(shard), []byte{byte(i)})
				pcancel()
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("entry %d not committed across the two transports: %v", total, err)
				}
				time.Sleep(50 * time.Millisecond) // no leader yet
			}
			total++
		}
	}
	// Each new replica runs the transport its leader does not, so the snapshot that brings it
	// up to date crosses them: dragonboat's to raftnet's, then raftnet's to dragonboat's.
	for _, c := range []struct{ leader, added uint64 }{{1, 3}, {2, 4}} {
		propose(30)
		for {
			if l, _, ok, _ := hosts[1].GetLeaderID(shard); ok && l == c.leader {
				break
			}
			hosts[1].RequestLeaderTransfer(shard, c.leader)
			if ctx.Err() != nil {
				t.Fatalf("leadership not moved to %d", c.leader)
			}
			time.Sleep(50 * time.Millisecond)
		}
		propose(30) // the log is compacted past every entry the new replica would need
		m, err := hosts[c.leader].SyncGetShardMembership(ctx, shard)
		if err != nil {
			t.Fatal(err)
		}
		addrs[c.added] = freeAddr(t)
		recovered[c.added] = &atomic.Bool{}
		if err := hosts[c.leader].SyncRequestAddReplica(ctx, shard, c.added, addrs[c.added], m.ConfigChangeID); err != nil {
			t.Fatal(err)
		}
		hosts[c.added] = start(c.added, c.leader == 1, nil, true)
		for {
			v, err := hosts[c.added].StaleRead(shard, nil)
			if err == nil && v.(uint64) >= total {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("replica %d did not catch up: %v, %v", c.added, v, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !recovered[c.added].Load() {
			t.Fatalf("replica %d caught up without a snapshot; the test did not send one across the transports", c.added)
		}
	}
}
