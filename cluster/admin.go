package cluster

// The admin HTTP port: the endpoint table, and the gauges /metrics exports.

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/corral/corral/adminauth"
	"github.com/corral/corral/format"
)

func (s *Node) startAdmin() {
	if s.cfg.AdminPort <= 0 {
		return
	}
	mux := http.NewServeMux()
	metrics := promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		metrics.ServeHTTP(w, r)
	})
	mux.HandleFunc("/metrics/raft", func(w http.ResponseWriter, r *http.Request) {
		// dragonboat's own metrics (Raft, log DB and transport, including fsync latency), in
		// Prometheus text format; scrape this path as a second target.
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		dragonboat.WriteHealthMetrics(w)
	})
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		if cut := s.cutOffShards(); len(cut) > 0 {
			// Its clients are being closed and sent elsewhere (design.md §3): not healthy.
			http.Error(w, fmt.Sprintf("cut off from the quorum of shards %v", cut), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/shards", func(w http.ResponseWriter, r *http.Request) {
		ids := append([]uint64{MetaShardID}, shardIDs(s.router)...)
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			lid, term, ok, _ := s.nh.GetLeaderID(id)
			fmt.Fprintf(w, "shard=%d leader=%d term=%d has_leader=%v\n", id, lid, term, ok)
		}
	})
	mux.HandleFunc("/shards/", s.serveShardsAdmin)
	mux.HandleFunc("/placement", s.servePlacement)
	mux.HandleFunc("/move", s.serveMove)
	mux.HandleFunc("/members", s.serveMembers)
	mux.HandleFunc("/members/", s.serveMembers)
	mux.HandleFunc("/import/stats", s.serveImportStats)
	mux.HandleFunc("/backup", s.serveBackup)
	mux.HandleFunc("/restore", s.serveRestore)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	addr := net.JoinHostPort(s.cfg.AdminAddress, fmt.Sprint(s.cfg.AdminPort))
	guard := adminauth.New(s.cfg.AdminAuth, superID(s.cfg.SuperDigest), s.log, mux) // POSTs need an operator
	s.admin = &http.Server{Addr: addr, Handler: guard, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", addr) // listening before Start returns: callers may POST at once
	if err != nil {
		s.log.Warn("admin server stopped", "addr", addr, "err", err)
		return
	}
	ln = s.adminTLS(ln, s.admin)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.admin.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("admin server stopped", "addr", addr, "err", err)
		}
	}()
}

// logTailReads counts the Raft log reads served from memory (or, with false, by the log store).
func (s *Node) logTailReads(memory bool) float64 {
	c := s.logTail.Load()
	switch {
	case c == nil:
		return 0
	case memory:
		return float64(c.hits.Load())
	default:
		return float64(c.misses.Load())
	}
}

// sessionCloses returns the client closes ended in one round (fenced false) or two.
func (s *Node) sessionCloses(fenced bool) float64 {
	if s.sessions == nil {
		return 0
	}
	return float64(s.sessions.Closes(fenced))
}

// registerGauges exports the state operators watch, computed at scrape time.
func (s *Node) registerGauges() {
	s.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "znode_count", Help: "Znodes on this server's replicas of all data shards."},
			func() float64 { return float64(s.nodeCount()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "corral_sessions_expired_total",
			Help: "Session expiries this server decided as the session table's leader (summed over the servers, each expiry counts once)."},
			func() float64 {
				if s.sessions == nil {
					return 0
				}
				return float64(s.sessions.Expired())
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "corral_session_closes_total", ConstLabels: prometheus.Labels{"rounds": "1"},
			Help: "Client closes this server ended on the data shards in one round (the closing connection was the session's latest owner) or, rounds=2, with the fence round first (docs/design.md §4, rule 5)."},
			func() float64 { return s.sessionCloses(false) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "corral_session_closes_total", ConstLabels: prometheus.Labels{"rounds": "2"},
			Help: "Client closes this server ended on the data shards in one round (the closing connection was the session's latest owner) or, rounds=2, with the fence round first (docs/design.md §4, rule 5)."},
			func() float64 { return s.sessionCloses(true) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "corral_session_close_shard_ops_total",
			Help: "Data-shard closeSession ops this server proposed to end closed sessions (one per shard per round; a client's close reaches only the shards its session wrote to when it can, docs/design.md §4)."},
			func() float64 { return float64(s.closeOps.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "watch_count", Help: "Watches registered on this server."},
			func() float64 { return float64(s.hub.WatchCount()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "global_sessions", Help: "Sessions in the replicated session table."},
			func() float64 { return float64(s.table.Len()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "last_processed_zxid", Help: "The largest zxid this server has applied."},
			func() float64 { return float64(s.router.LastZxid()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_format_level", Help: "The ensemble's active format level (docs/operations.md, Upgrading)."},
			func() float64 { return float64(s.table.Level()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_format_level_supported", Help: "The highest format level this server's binary reads."},
			func() float64 { return float64(format.Supported) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "corral_raft_log_reads_total", ConstLabels: prometheus.Labels{"from": "memory"},
			Help: "Reads of Raft log entries no longer in dragonboat's memory (a leader catching up a follower), served from Corral's in-memory tail (from=memory) or from the log store (from=store) (docs/storage.md, Catch-up)."},
			func() float64 { return s.logTailReads(true) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "corral_raft_log_reads_total", ConstLabels: prometheus.Labels{"from": "store"},
			Help: "Reads of Raft log entries no longer in dragonboat's memory (a leader catching up a follower), served from Corral's in-memory tail (from=memory) or from the log store (from=store) (docs/storage.md, Catch-up)."},
			func() float64 { return s.logTailReads(false) }),
	)
	for i, outcome := range []string{"moved", "not_moved", "not_drained"} {
		s.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "corral_leadership_pulls_total", ConstLabels: prometheus.Labels{"outcome": outcome},
			Help: "Shard leaderships this server asked for because it proposed nearly all of the shard's writes (docs/design.md §15, \"Leaders follow the writes\"): moved, not moved within the transfer wait, or not asked because its batches in flight did not drain."},
			func() float64 { return float64(s.followPulls[i].Load()) }))
	}
	s.reg.MustRegister(storeCollector{&s.replicas})
	for _, id := range s.allShards() {
		s.registerShardGauges(id) // shards added later register theirs when they start
	}
}
