package replica

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/corral/corral/shard"
)

// TestStoreStats: a replica's store figures count its syncs and what they flushed, and keep
// counting over the store a snapshot recovery replaces (the counters never go back).
func TestStoreStats(t *testing.T) {
	m, _ := openMachine(t, testConfig(t.TempDir(), nil))
	defer m.Close()
	opened := m.StoreStats()
	if opened.Syncs != 0 {
		t.Fatalf("syncs before any Sync: %+v", opened)
	}
	var ops []shard.Op
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		data := make([]byte, 1024) // random: pebble compresses its blocks
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		ops = append(ops, opCreate(fmt.Sprintf("/n%03d", i), data, 0))
	}
	update(t, m, entries(1, batch(1, 1, 1_000, ops...)))
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	synced := m.StoreStats()
	if synced.Syncs != 1 || synced.Flushes <= opened.Flushes || synced.FlushedBytes < 200*1024 || synced.Bytes == 0 || synced.SyncSeconds <= 0 {
		t.Fatalf("after a Sync of 200 znodes of 1 KiB: %+v (opened: %+v)", synced, opened)
	}

	// A fresh replica recovers m's snapshot: its counters include its replaced store's.
	r, _ := openMachine(t, testConfig(t.TempDir(), nil))
	defer r.Close()
	update(t, r, entries(1, batch(2, 1, 1_000, ops[:50]...)))
	if err := r.Sync(); err != nil {
		t.Fatal(err)
	}
	before := r.StoreStats()
	if err := r.RecoverFromSnapshot(bytes.NewReader(saveSnapshot(t, m)), nil); err != nil {
		t.Fatal(err)
	}
	after := r.StoreStats()
	if after.Syncs != before.Syncs || after.Flushes < before.Flushes || after.FlushedBytes < before.FlushedBytes || after.Bytes == 0 {
		t.Fatalf("after recovery: %+v, before: %+v", after, before)
	}
}
