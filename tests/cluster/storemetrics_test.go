package clustertest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/testcluster"
)

// TestStoreMetrics: every server exports its data shard replica's store figures on /metrics,
// and they follow the writes: with corral.syncDirtyZnodes=100, 300 creates of 1 KiB make every
// replica sync its state, and the syncs flush at least the 300 KiB of data to its store.
func TestStoreMetrics(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 1, Admin: true,
		Extra: []string{"corral.syncDirtyZnodes=100"}})
	c, _ := connect(t, cl.Addrs()[:1])
	acl := zk.WorldACL(zk.PermAll)
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 1024) // random: pebble compresses its blocks
	for i := range 300 {
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		if _, err := c.Create(fmt.Sprintf("/s%03d", i), data, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	const shard = `{shard="2"}` // the one data shard
	for i := range 3 {
		deadline := time.Now().Add(20 * time.Second)
		for {
			syncs, err1 := cl.Metric(i, "corral_store_syncs_total"+shard)
			flushed, err2 := cl.Metric(i, "corral_store_flushed_bytes_total"+shard)
			size, err3 := cl.Metric(i, "corral_store_bytes"+shard)
			if err1 != nil || err2 != nil || err3 != nil {
				t.Fatalf("server %d: %v %v %v", i+1, err1, err2, err3)
			}
			if syncs >= 1 && flushed >= 300*1024 && size > 0 {
				t.Logf("server %d: %v syncs, %v bytes flushed, store %v bytes", i+1, syncs, flushed, size)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server %d after 300 creates of 1 KiB: %v syncs, %v bytes flushed, store %v bytes", i+1, syncs, flushed, size)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
