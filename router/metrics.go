package router

import "github.com/prometheus/client_golang/prometheus"

// Metrics describe the proposers of one server (all shards share them, labelled by shard).
type Metrics struct {
	batchOps   *prometheus.HistogramVec
	latency    *prometheus.HistogramVec
	retries    *prometheus.CounterVec
	queueDepth *prometheus.GaugeVec
}

// NewMetrics creates proposer metrics registered with reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		batchOps: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "corral_proposal_batch_ops",
			Help: "Requests per Raft entry, by shard.", Buckets: prometheus.ExponentialBuckets(1, 2, 11)}, []string{"shard"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "corral_proposal_seconds",
			Help:    "Time from proposing a batch to this server having applied it, by shard.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}, []string{"shard"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "corral_proposal_retries_total",
			Help: "Batches proposed again, by shard and reason (retryable, unknown, out_of_order, blocked)."}, []string{"shard", "reason"}),
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "corral_proposal_queue",
			Help: "Requests waiting to be cut into a batch, by shard."}, []string{"shard"}),
	}
	if reg != nil {
		reg.MustRegister(m.batchOps, m.latency, m.retries, m.queueDepth)
	}
	return m
}
