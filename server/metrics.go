package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral/corral/wire"
)

// Metrics are the client port's Prometheus metrics, named as ZooKeeper's Prometheus provider
// names them where a ZooKeeper name exists.
type Metrics struct {
	connections prometheus.Gauge
	outstanding prometheus.Gauge
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	errors      *prometheus.CounterVec
	watchEvents prometheus.Counter
	rerouted    prometheus.Counter
	throttled   prometheus.Counter
	parkedReads prometheus.Counter
	leaseWaits  prometheus.Counter
	leaseDrops  prometheus.Counter
	stuckDrops  prometheus.Counter
	// groups and groupedWrites count group commits (group.go) and the writes they carried.
	groups        prometheus.Counter
	groupedWrites prometheus.Counter
	groupsBusy    prometheus.Counter
	// groupsYielded counts groups that ran one shard at a time because writes were waiting
	// behind the session's earlier groups (group.go, writersWaiting).
	groupsYielded prometheus.Counter
	// groupsRepliedAtDecision counts groups whose replies were queued at their decision.
	groupsRepliedAtDecision prometheus.Counter
	// groupCommitsHanded counts groups whose commits travelled with the next group's prepares.
	groupCommitsHanded prometheus.Counter

	// Pre-resolved children of the vectors, so the request path does no label lookups.
	byOp      map[wire.OpCode]prometheus.Counter
	unknownOp prometheus.Counter
	readLat   prometheus.Observer
	writeLat  prometheus.Observer
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: "num_alive_connections",
			Help: "Number of open client connections."}),
		outstanding: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outstanding_requests",
			Help: "Requests read from clients and not yet answered."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "corral_requests_total",
			Help: "Client requests by opcode name."}, []string{"op"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "corral_request_latency_seconds",
			Help:    "Time from reading a request to queueing its reply, by kind (read, write).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 18)}, []string{"kind"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "corral_request_errors_total",
			Help: "Replies with a non-zero error code, by ZooKeeper error name."}, []string{"err"}),
		watchEvents: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_watch_events_total",
			Help: "Watch notifications queued to connections."}),
		rerouted: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_rerouted_writes_total",
			Help: "Writes proposed again after their shard sent them back because of a subtree move."}),
		throttled: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_throttled_reads_total",
			Help: "Times a connection stopped reading requests because the server was over its outstanding limit."}),
		parkedReads: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_parked_reads_total",
			Help: "Reads answered from the view right after the connection's pending write instead of waiting for its reply (docs/design.md §8)."}),
		leaseWaits: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_session_lease_waits_total",
			Help: "Times a connection held its output until its session's lease was renewed."}),
		leaseDrops: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_session_lease_drops_total",
			Help: "Connections closed because their session was not renewed for two thirds of its timeout."}),
		stuckDrops: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_stuck_write_drops_total",
			Help: "Connections closed because their oldest write waited longer than the read bound on a replica cut off from its shard's quorum."}),
		groups: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_write_groups_total",
			Help: "Groups of one session's pipelined writes across shards, run together after the earlier writes' replies."}),
		groupedWrites: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_grouped_writes_total",
			Help: "Writes that ran in a group (corral_write_groups_total)."}),
		groupsBusy: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_write_groups_busy_total",
			Help: "Groups whose transaction met another one and whose writes then went one shard at a time."}),
		groupsYielded: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_write_groups_yielded_total",
			Help: "Groups whose writes went one shard at a time, without a transaction, because other writes had waited behind the session's earlier groups."}),
		groupsRepliedAtDecision: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_write_groups_replied_at_decision_total",
			Help: "Groups whose replies were queued once every participant had prepared them, before their commits applied."}),
		groupCommitsHanded: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_write_groups_commits_handed_total",
			Help: "Groups whose commits travelled in the same Raft entries as the next group's prepares."}),
	}
	m.byOp = map[wire.OpCode]prometheus.Counter{}
	for op, name := range opNames {
		m.byOp[op] = m.requests.WithLabelValues(name)
	}
	m.unknownOp = m.requests.WithLabelValues("unknown")
	m.readLat = m.latency.WithLabelValues("read")
	m.writeLat = m.latency.WithLabelValues("write")
	if reg != nil {
		reg.MustRegister(m.connections, m.outstanding, m.requests, m.latency, m.errors, m.watchEvents, m.rerouted, m.throttled,
			m.leaseWaits, m.leaseDrops, m.stuckDrops, m.groups, m.groupedWrites, m.groupsBusy,
			m.groupsYielded, m.groupsRepliedAtDecision, m.groupCommitsHanded, m.parkedReads)
	}
	return m
}

func (m *Metrics) countOp(op wire.OpCode) {
	if c, ok := m.byOp[op]; ok {
		c.Inc()
		return
	}
	m.unknownOp.Inc()
}

func (m *Metrics) observe(kind string, seconds float64) {
	if kind == "write" {
		m.writeLat.Observe(seconds)
		return
	}
	m.readLat.Observe(seconds)
}
