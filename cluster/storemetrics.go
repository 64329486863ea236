package cluster

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral/corral/replica"
)

// replicas are this server's data shard replicas by shard id, for their store figures (the
// latest replica dragonboat created for each shard; one that stopped, because the shard left
// this server, keeps its last figures until the server restarts).
type replicas struct{ m sync.Map }

func (r *replicas) add(id uint64, m *replica.Machine) { r.m.Store(id, m) }

// get returns the shard's replica, or nil.
func (r *replicas) get(id uint64) *replica.Machine {
	if v, ok := r.m.Load(id); ok {
		return v.(*replica.Machine)
	}
	return nil
}

// storeCollector exports every data shard replica's store figures (replica.StoreStats) on
// /metrics, labelled by shard: what the state syncs cost and what pebble writes for them.
type storeCollector struct{ r *replicas }

var (
	storeSyncs = prometheus.NewDesc("corral_store_syncs_total",
		"State syncs of this server's replica of the shard: its changed znodes written to its pebble store and flushed (docs/storage.md).", []string{"shard"}, nil)
	storeSyncSeconds = prometheus.NewDesc("corral_store_sync_seconds_total",
		"Time the replica's state syncs took; the shard applies nothing while one runs.", []string{"shard"}, nil)
	storeFlushedBytes = prometheus.NewDesc("corral_store_flushed_bytes_total",
		"Bytes the replica's store flushed from memtables to sstables.", []string{"shard"}, nil)
	storeCompactions = prometheus.NewDesc("corral_store_compactions_total",
		"Background compactions of the replica's store.", []string{"shard"}, nil)
	storeCompactedBytes = prometheus.NewDesc("corral_store_compacted_bytes_total",
		"Bytes the replica's store's compactions wrote; (flushed+compacted)/flushed is its write amplification.", []string{"shard"}, nil)
	storeL0Files = prometheus.NewDesc("corral_store_l0_files",
		"Level-0 sstables of the replica's store.", []string{"shard"}, nil)
	storeBytes = prometheus.NewDesc("corral_store_bytes",
		"Size of the replica's store's sstables.", []string{"shard"}, nil)
)

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{storeSyncs, storeSyncSeconds, storeFlushedBytes, storeCompactions,
		storeCompactedBytes, storeL0Files, storeBytes} {
		ch <- d
	}
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	c.r.m.Range(func(k, v any) bool {
		shard := fmt.Sprint(k)
		st := v.(*replica.Machine).StoreStats()
		for _, m := range []struct {
			d *prometheus.Desc
			t prometheus.ValueType
			v float64
		}{
			{storeSyncs, prometheus.CounterValue, float64(st.Syncs)},
			{storeSyncSeconds, prometheus.CounterValue, st.SyncSeconds},
			{storeFlushedBytes, prometheus.CounterValue, float64(st.FlushedBytes)},
			{storeCompactions, prometheus.CounterValue, float64(st.Compactions)},
			{storeCompactedBytes, prometheus.CounterValue, float64(st.CompactedBytes)},
			{storeL0Files, prometheus.GaugeValue, float64(st.L0Files)},
			{storeBytes, prometheus.GaugeValue, float64(st.Bytes)},
		} {
			ch <- prometheus.MustNewConstMetric(m.d, m.t, m.v, shard)
		}
		return true
	})
}
