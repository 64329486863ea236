package cluster

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/corral/corral/audit"
	"github.com/corral/corral/router"
	"github.com/corral/corral/server"
	"github.com/corral/corral/session"
	"github.com/corral/corral/tlsconf"
	"github.com/corral/corral/watchhub"
)

// Node is one running Corral server: its Raft groups (dragonboat NodeHost, the meta shard,
// the data shards), its client port (the protocol front end, package server's Server), its
// admin port and its background loops.
type Node struct {
	cfg      Config
	log      *slog.Logger
	logTail  atomic.Pointer[tailCache] // the Raft log store's in-memory tail (logcache.go), for metrics
	replicas replicas                  // data shard replicas, for their store figures (storemetrics.go)
	nh       *dragonboat.NodeHost
	router   *router.Router
	hub      *watchhub.Hub
	table    *session.Table
	sessions *session.Manager
	client   *server.Server
	audit    *audit.Log // audit.enable: opened with the client port, closed after it
	// auditApply is audit for the shards' apply goroutines (shardListener, audit.go): set
	// once the log is open, nil again before it closes.
	auditApply atomic.Pointer[audit.Log]
	reg        *prometheus.Registry
	admin      *http.Server
	ln         net.Listener
	tls        *tlsconf.Source   // secure client port (nil without secureClientPort), tls.go
	secureLn   *tlsconf.Listener // its listener, merged into ln
	qtls       *tlsconf.Source   // ssl.quorum.* stores (sslQuorum, admin.forceHttps), tls.go

	metrics   *backupMetrics // backup_metrics.go
	restoring sync.Mutex     // held by the one POST /restore this server runs at a time

	srvPtr atomic.Pointer[server.Server]
	// metaConfirmed is when (unix ns) a catch-up round on the meta shard last began that then
	// completed: this server heard the session table's quorum then (quorumLost).
	metaConfirmed atomic.Int64
	balance       balanceState     // owned by balanceOnce (one goroutine, see every)
	follow        followState      // owned by followOnce, on balanceOnce's goroutine
	followPulls   [3]atomic.Uint64 // leadership pulls by outcome (follow.go)
	// handingOff is set once HandOffLeadership began: the server is stopping and pulls nothing.
	handingOff atomic.Bool
	members    memberState  // membership.go
	added      addedState   // addshard.go
	syncReqs   syncRequests // syncdirty.go
	// closeOps counts the data-shard closeSession ops this server proposed (closeOnShards): one
	// per shard per round.
	closeOps atomic.Uint64
	leaders  leaderEpochs
	ready    atomic.Bool
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// Start runs a server from cfg and returns once it accepts clients.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*Node, error) {
	if log == nil {
		log = slog.Default()
	}
	QuietDragonboat()
	s := &Node{cfg: cfg, log: log.With("server", cfg.MyID), reg: prometheus.NewRegistry()}
	if err := s.loadTLS(); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.metrics = newBackupMetrics(s.reg)
	if err := s.startRaft(); err != nil {
		s.cancel()
		return nil, err
	}
	readyFrom := time.Now()
	if err := s.waitReady(ctx); err != nil {
		s.Close()
		return nil, err
	}
	s.metaConfirmed.Store(readyFrom.UnixNano()) // waitReady caught up with the meta shard
	if err := s.startClientPort(); err != nil {
		s.Close()
		return nil, err
	}
	s.registerGauges()
	s.startAdmin()
	s.wg.Add(6)
	go s.every(s.maxReadAge()/4, s.refreshReplicasOnce)
	go s.every(membershipInterval, s.membershipOnce)
	go s.every(membershipInterval, s.formatLevelOnce)
	go s.every(txnRecoveryEvery, s.recoverTxnsOnce)
	go s.every(s.cfg.ContainerCheck, s.expireContainersOnce)
	go s.every(followInterval, s.balanceAndFollow)
	s.ready.Store(true)
	s.serveClients()
	s.log.Info("serving clients", "client", s.ln.Addr().String(), "shards", cfg.Shards, "peers", len(cfg.AllPeers()))
	return s, nil
}

// ClientAddr is the address clients connect to.
func (s *Node) ClientAddr() string { return s.ln.Addr().String() }

// NodeHost exposes the NodeHost (tests and admin tools).
func (s *Node) NodeHost() *dragonboat.NodeHost { return s.nh }

// Router exposes the router (tests and admin tools).
func (s *Node) Router() *router.Router { return s.router }

// SessionTable exposes this server's replica of the session table (tests and admin tools).
func (s *Node) SessionTable() *session.Table { return s.table }

// Close shuts the server down and waits for everything it started.
func (s *Node) Close() error {
	s.ready.Store(false)
	if s.client != nil {
		s.client.Close()
	}
	if s.audit != nil {
		s.auditApply.Store(nil)
		s.audit.Close()
	}
	if s.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s.admin.Shutdown(ctx)
		cancel()
	}
	if s.sessions != nil {
		s.sessions.Stop()
	}
	s.stopProposers()
	s.cancel()
	if s.nh != nil {
		s.nh.Close()
	}
	s.wg.Wait()
	s.stopProposers() // again: the root shard may have added a shard while the server closed
	return nil
}
