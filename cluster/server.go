package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/config"
	dblogger "github.com/lni/dragonboat/v4/logger"
	"github.com/lni/dragonboat/v4/plugin/tan"
	"github.com/lni/dragonboat/v4/raftio"
	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/corral/corral/adminauth"
	"github.com/corral/corral/audit"
	"github.com/corral/corral/format"
	"github.com/corral/corral/raftnet"
	"github.com/corral/corral/router"
	"github.com/corral/corral/server"
	"github.com/corral/corral/session"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/tlsconf"
	"github.com/corral/corral/watchhub"
	"github.com/corral/corral/wire"
)

// MetaShardID is the Raft group holding the session table.
const MetaShardID = 1

// DataShardID returns the Raft group id of data shard i (0-based).
func DataShardID(i int) uint64 { return uint64(i) + 2 }

var loggerOnce sync.Once

// quietDragonboat lowers dragonboat's own logging to errors, once per process
// (CORRAL_DRAGONBOAT_LOG=info keeps its informational messages, for debugging).
func quietDragonboat() {
	loggerOnce.Do(func() {
		level := dblogger.ERROR
		if os.Getenv("CORRAL_DRAGONBOAT_LOG") == "info" {
			level = dblogger.INFO
		}
		for _, name := range []string{"raft", "rsm", "transport", "dragonboat", "logdb", "raftpb", "config", "settings", "grpc", "tan", "registry", "server"} {
			dblogger.GetLogger(name).SetLevel(level)
		}
	})
}

// Server is one running Corral server.
type Server struct {
	cfg      Config
	log      *slog.Logger
	logTail  atomic.Pointer[tailCache] // the Raft log store's in-memory tail (logcache.go), for metrics
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
	balance       balanceState // owned by balanceOnce (one goroutine, see every)
	members       memberState  // membership.go
	added         addedState   // addshard.go
	leaders       leaderEpochs
	ready         atomic.Bool
	ctx           context.Context
	cancel        context.CancelFunc
	wg            sync.WaitGroup
}

// Start runs a server from cfg and returns once it accepts clients.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	quietDragonboat()
	s := &Server{cfg: cfg, log: log.With("server", cfg.MyID), reg: prometheus.NewRegistry()}
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
	go s.every(balanceInterval, s.balanceOnce)
	s.ready.Store(true)
	s.log.Info("serving clients", "client", s.ln.Addr().String(), "shards", cfg.Shards, "peers", len(cfg.AllPeers()))
	return s, nil
}

func (s *Server) startRaft() error {
	cfg := s.cfg
	base := filepath.Join(cfg.DataDir, "corral")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	self := cfg.Self()
	nhc := config.NodeHostConfig{
		NodeHostDir:    filepath.Join(base, "nodehost"),
		RTTMillisecond: uint64(cfg.RTT / time.Millisecond),
		RaftAddress:    self.RaftAddress(),
		// tan, dragonboat's append-only log store: the pebble-based default spent about a
		// quarter of a write-heavy server's CPU compacting the Raft log (docs/storage.md).
		// raftnet: dragonboat's framing, but a restarted peer's stale links are replaced
		// instead of tripping dragonboat's per-peer circuit breaker (raftnet/doc.go).
		Expert: config.ExpertConfig{LogDB: logDBConfig(), LogDBFactory: stateFillingFactory{inner: tan.Factory, tail: &s.logTail, tailBytes: cfg.RaftTailBytes},
			TransportFactory: raftnet.Factory{Log: s.log, TLS: s.startQuorumTLS()}},
		RaftEventListener:   leaderListener{s},
		EnableMetrics:       true,
		MaxSendQueueSize:    cfg.RaftQueueBytes,
		MaxReceiveQueueSize: cfg.RaftQueueBytes,
	}
	if cfg.DataLogDir != "" {
		nhc.WALDir = filepath.Join(cfg.DataLogDir, "corral-wal")
	}
	if nhc.RTTMillisecond == 0 {
		nhc.RTTMillisecond = 10
	}
	s.hub = watchhub.New(watchhub.Options{})
	ids := make([]uint64, cfg.Shards)
	tags := make([]uint8, cfg.Shards)
	for i := range ids {
		ids[i], tags[i] = DataShardID(i), uint8(i+1)
	}
	s.router = router.New(ids, tags, cfg.Placement, s.hub.Trigger)
	s.router.SetShardHooks(s.shardHooks())
	s.router.SetQuotaMode(s.quotaMode)
	if len(cfg.Mounts) > 0 {
		mounts := []router.Mount{{Path: "/", ShardID: ids[0]}}
		for _, m := range cfg.Mounts {
			if m.ShardID < ids[0] || m.ShardID > ids[len(ids)-1] {
				return fmt.Errorf("cluster: corral.mount.%s=%d: not a data shard id (%d..%d)", m.Path, m.ShardID, ids[0], ids[len(ids)-1])
			}
			mounts = append(mounts, m)
		}
		s.router.SetMounts(mounts)
	}
	s.router.SetSync(s.Sync)
	for id, d := range cfg.testing.ApplyLag {
		if sh := s.router.Shard(id); sh != nil {
			sh.SetApplyLag(d)
		}
	}
	if err := setRaftMessageBytes(cfg.RaftMessageBytes); err != nil {
		return err
	}
	nh, err := dragonboat.NewNodeHost(nhc)
	if err != nil {
		return fmt.Errorf("cluster: starting raft node host at %s: %w", self.RaftAddress(), err)
	}
	s.nh = nh

	pm := router.NewMetrics(s.reg)
	raftCfg := func(shardID uint64) config.Config {
		return config.Config{ShardID: shardID, ReplicaID: cfg.MyID, ElectionRTT: 20, HeartbeatRTT: 2,
			CheckQuorum: cfg.CheckQuorum, PreVote: true, SnapshotEntries: cfg.SnapshotEntries, CompactionOverhead: cfg.SnapshotEntries / 4,
			MaxInMemLogSize: 256 << 20, IsNonVoting: cfg.Observer()}
	}

	s.added.raftCfg, s.added.metrics = raftCfg, pm
	s.wg.Add(1)
	go s.runShardStarter() // before the root shard opens: it may list added shards

	s.table = session.NewTable(func(c session.Change) {
		if srv := s.srvPtr.Load(); srv != nil {
			srv.SessionChanged(c.ID, c.Closing, c.Owner)
		}
	})
	initial, join := bootstrap(nh, &cfg, MetaShardID)
	if err := nh.StartReplica(initial, join, func(uint64, uint64) sm.IStateMachine { return s.table },
		raftCfg(MetaShardID)); err != nil {
		return fmt.Errorf("cluster: starting meta shard: %w", err)
	}
	for i, id := range ids {
		// The proposers exist before the replica starts: the leader listener may call them.
		s.makeProposers(s.router.Shard(id))
		initial, join := bootstrap(nh, &cfg, id)
		if err := s.startDataShard(id, tags[i], i == 0, initial, join); err != nil {
			return fmt.Errorf("cluster: starting data shard %d: %w", id, err)
		}
	}
	s.sessions = session.NewManager(session.Options{Self: cfg.MyID, Tick: cfg.TickTime / 4, Table: s.table,
		Meta: metaRaft{s}, CloseOnShards: s.closeOnShards, Log: s.log})
	return nil
}

// proposeFunc adapts dragonboat's asynchronous proposal to router.ProposeFunc.
func (s *Server) proposeFunc(shardID uint64) router.ProposeFunc {
	cs := s.nh.GetNoOPSession(shardID)
	return func(ctx context.Context, cmd []byte) (func() ([]byte, error), error) {
		rs, err := s.nh.Propose(cs, cmd, dataAttempt)
		if err != nil {
			switch {
			case errors.Is(err, dragonboat.ErrClosed), errors.Is(err, dragonboat.ErrShardClosed):
				return nil, fmt.Errorf("%w: %v", router.ErrStopped, err)
			default:
				return nil, fmt.Errorf("%w: %v", router.ErrRetryable, err)
			}
		}
		return func() ([]byte, error) {
			defer rs.Release()
			select {
			case r := <-rs.ResultC():
				switch {
				case r.Completed():
					return r.GetResult().Data, nil
				case r.Dropped(), r.Rejected():
					return nil, fmt.Errorf("%w: proposal dropped", router.ErrRetryable)
				case r.Terminated():
					return nil, fmt.Errorf("%w: shard terminated", router.ErrStopped)
				default:
					return nil, errors.New("proposal timed out or aborted")
				}
			case <-ctx.Done():
				// Shutdown, or the proposer gave up on this attempt after a leader change.
				return nil, ctx.Err()
			}
		}, nil
	}
}

// closeOnShards ends a closed session on every data shard in two rounds: first every shard
// records the session's tombstone (from then on it refuses every write of the session with
// SESSIONEXPIRED), then every shard deletes the session's ephemerals. So no shard applies a
// write of the session after any of its ephemerals is gone: a lock holder's late write cannot
// land after another client saw the lock released and took it (docs/design.md §4).
func (s *Server) closeOnShards(ctx context.Context, id int64) error {
	if err := s.closeRound(ctx, id, shard.CloseSessionFence()); err != nil {
		return err
	}
	return s.closeRound(ctx, id, nil)
}

func (s *Server) closeRound(ctx context.Context, id int64, body []byte) error {
	return s.router.OnEveryShard(ctx, shard.Op{Session: id, Code: wire.OpCloseSession, Body: body})
}

// Sync makes this replica of shardID catch up with its leader (ReadIndex). An attempt that gets
// no answer (its leader just died) is retried after metaAttempt.
func (s *Server) Sync(ctx context.Context, shardID uint64) error {
	if err := s.waitOpened(ctx, shardID); err != nil {
		return err
	}
	return s.retryAttempts(ctx, shardID, func(actx context.Context) error {
		_, err := s.nh.SyncRead(actx, shardID, nil)
		return err
	})
}

// metaAttempt bounds one proposal attempt on the meta shard. A proposal forwarded to a leader
// that just died is lost without an answer; rather than wait for the caller's whole deadline,
// the attempt ends and the command is proposed again (session commands are idempotent or
// recognisably repeated: see session.Manager).
const metaAttempt = 1500 * time.Millisecond

// dataAttempt bounds one proposal of a batch on a data shard before its outcome counts as
// unknown and the proposer proposes it again (the shard deduplicates). A leader drops a
// proposal a follower forwarded while it transfers its leadership, without an answer; when
// the transfer fails (the target may skip the election, cluster/handoff.go) the leader stays and
// nothing tells the follower, whose proposal then waits out this bound. A leader change, the
// other way a forwarded proposal is lost, ends the wait at once (router.Proposer.LeaderChanged).
const dataAttempt = 2 * time.Second

type metaRaft struct{ s *Server }

func (m metaRaft) Propose(ctx context.Context, cmd []byte) (uint64, error) {
	var v uint64
	err := m.s.retryAttempts(ctx, MetaShardID, func(actx context.Context) error {
		res, err := m.s.nh.SyncPropose(actx, m.s.nh.GetNoOPSession(MetaShardID), cmd)
		v = res.Value
		return err
	})
	return v, err
}

// retryAttempts runs f with a per-attempt deadline of metaAttempt until it succeeds, fails with
// a permanent error, or ctx (default 10 s) ends. An attempt also ends early when the shard's
// leader changes: a request forwarded to the old leader may have been lost with it.
func (s *Server) retryAttempts(ctx context.Context, shardID uint64, f func(context.Context) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	for {
		actx, cancel := context.WithTimeout(ctx, metaAttempt)
		changed := s.leaders.changed(shardID)
		go func() {
			select {
			case <-changed:
				cancel()
			case <-actx.Done():
			}
		}()
		err := f(actx)
		attemptEnded := actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			return nil
		}
		// An attempt ended by its own deadline or by a leader change (actx done, ctx not) is
		// retried whatever dragonboat called it (ErrTimeout, ErrCanceled).
		if ctx.Err() != nil || (!attemptEnded && !dragonboat.IsTempError(err)) ||
			errors.Is(err, dragonboat.ErrClosed) || errors.Is(err, dragonboat.ErrShardClosed) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (m metaRaft) Barrier(ctx context.Context) error { return m.s.Sync(ctx, MetaShardID) }

func (m metaRaft) IsLeader() bool {
	id, _, ok, err := m.s.nh.GetLeaderID(MetaShardID)
	return err == nil && ok && id == m.s.cfg.MyID
}

// waitReady waits until every shard has a leader and has published its first view. The shards
// are looked at again in every round: catching up with the root shard can add shards (added
// online while this server was down), which it then waits for too.
func (s *Server) waitReady(ctx context.Context) error {
	start, lastReport := time.Now(), time.Now()
	why := ""
	caughtUp := map[uint64]bool{}
	for {
		if time.Since(lastReport) > 5*time.Second {
			s.log.Info("still waiting to serve clients", "waited", time.Since(start).Round(time.Second).String(), "reason", why)
			lastReport = time.Now()
		}
		all := s.allShards()
		var pending []uint64
		for _, id := range all {
			if !caughtUp[id] {
				pending = append(pending, id)
			}
		}
		ready := len(all) == len(s.router.Shards())+1
		if !ready {
			why = "a data shard added online has not started yet"
		}
		for _, id := range all {
			if _, _, ok, err := s.nh.GetLeaderID(id); err != nil || !ok {
				if errors.Is(err, dragonboat.ErrShardNotFound) {
					return errRemovedAtStart(id)
				}
				ready = false
				why = fmt.Sprintf("shard %d has no known leader", id)
				break
			}
		}
		if ready {
			for _, sh := range s.router.Shards() {
				select {
				case <-sh.Ready():
				default:
					ready = false
					why = fmt.Sprintf("shard %d has not opened", sh.ID)
				}
			}
		}
		if ready {
			// Catch up with what is committed, so the first clients read recent state. All
			// shards at once (a restarted server replays each shard's log; one after another
			// this took the sum of the replays), and only the shards still behind are retried.
			var mu sync.Mutex
			var wg sync.WaitGroup
			behind := 0
			for _, id := range pending {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					t0 := time.Now()
					err := s.Sync(cctx, id)
					cancel()
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						behind++
						why = fmt.Sprintf("shard %d did not catch up: %v", id, err)
						return
					}
					caughtUp[id] = true
					if d := time.Since(t0); d > time.Second {
						s.log.Info("caught up with a shard before serving", "shard", id, "took", d.Round(time.Millisecond).String())
					}
				}()
			}
			wg.Wait()
			// The catch-up may have added shards: look again before serving.
			ready = behind == 0 && len(s.allShards()) == len(all) && len(s.router.Shards())+1 == len(all)
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: waiting for shard leaders: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func shardIDs(r *router.Router) []uint64 {
	var out []uint64
	for _, sh := range r.Shards() {
		out = append(out, sh.ID)
	}
	return out
}

func (s *Server) startClientPort() error {
	ln, err := s.listenClients()
	if err != nil {
		return err
	}
	s.ln = ln
	if s.cfg.Audit {
		if s.audit, err = audit.Open(s.cfg.AuditPath(), s.log); err != nil {
			ln.Close()
			return fmt.Errorf("cluster: %w", err)
		}
		s.auditApply.Store(s.audit)
	}
	s.client = server.New(server.Options{
		ServerID: s.cfg.MyID, MaxBuffer: s.cfg.MaxBuffer, MinTimeout: s.cfg.MinSessionTimeout,
		MaxTimeout: s.cfg.MaxSessionTimeout, MaxClientCnxns: s.cfg.MaxClientCnxns,
		FourLetterWords: s.cfg.FourLetterWords, SuperDigest: superID(s.cfg.SuperDigest),
		ExtendedTypes: s.cfg.ExtendedTypes, Router: s.router, Sessions: s.sessions, Hub: s.hub,
		Sync: s.Sync, Info: s.info, Metrics: server.NewMetrics(s.reg), Log: s.log,
		OutstandingLimit: s.cfg.GlobalOutstandingLimit,
		MaxReadAge:       s.maxReadAge(),
		ReadOnly:         s.readOnly,
		MetaCutOff:       s.metaCutOff,
		Leaderless:       s.leaderless,
		SASL:             s.cfg.SASLAuth,
		Audit:            s.audit,
	})
	s.srvPtr.Store(s.client)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.client.Serve(ln); err != nil && !errors.Is(err, server.ErrClosed) {
			s.log.Error("client port stopped", "err", err)
		}
	}()
	return nil
}

// superID turns "super:<digest>" into the digest id clients authenticate as.
func superID(v string) string { return strings.TrimSpace(v) }

func (s *Server) info() server.Info {
	mode := "follower"
	if len(s.cfg.AllPeers()) == 1 {
		mode = "standalone"
	} else if s.cfg.Observer() {
		mode = "observer"
	} else if (metaRaft{s}).IsLeader() {
		mode = "leader"
	}
	var size int64
	var lines []string
	for _, sh := range s.router.Shards() {
		if v := sh.View(); v != nil {
			size += v.ApproximateDataSize() // walks every node: srvr and mntr only, not scrapes
		}
		lid, term, ok, _ := s.nh.GetLeaderID(sh.ID)
		lines = append(lines, fmt.Sprintf("corral_shard_leader{shard=\"%d\"}\t%d\ncorral_shard_term{shard=\"%d\"}\t%d\ncorral_shard_has_leader{shard=\"%d\"}\t%v",
			sh.ID, lid, sh.ID, term, sh.ID, ok))
	}
	return server.Info{Mode: mode, Config: s.confText(), NodeCount: s.nodeCount(), DataSize: size, Ensemble: len(s.cfg.AllPeers()), ShardLines: lines}
}

// nodeCount is ZooKeeper's node count over this server's replicas of every shard.
func (s *Server) nodeCount() int {
	nodes := 0
	for _, sh := range s.router.Shards() {
		if v := sh.View(); v != nil {
			nodes += v.Len() // every znode this shard serves (a top-level node's stub on the root shard is not one)
			if _, ok := v.Get("/"); ok {
				// ZooKeeper's DataTree holds the root under two names ("" and "/"), and its
				// node count (srvr, mntr) counts both.
				nodes++
			}
		}
	}
	return nodes
}

func (s *Server) confText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "clientPort=%d\n", s.cfg.ClientPort)
	if s.cfg.TLS.Enabled() {
		fmt.Fprintf(&b, "secureClientPort=%d\n", s.cfg.TLS.SecurePort)
	}
	fmt.Fprintf(&b, "dataDir=%s\n", s.cfg.DataDir)
	fmt.Fprintf(&b, "tickTime=%d\n", s.cfg.TickTime.Milliseconds())
	fmt.Fprintf(&b, "maxClientCnxns=%d\n", s.cfg.MaxClientCnxns)
	fmt.Fprintf(&b, "minSessionTimeout=%d\n", s.cfg.MinSessionTimeout.Milliseconds())
	fmt.Fprintf(&b, "maxSessionTimeout=%d\n", s.cfg.MaxSessionTimeout.Milliseconds())
	fmt.Fprintf(&b, "serverId=%d\n", s.cfg.MyID)
	fmt.Fprintf(&b, "corral.shards=%d\n", s.cfg.Shards)
	for _, p := range s.cfg.Peers {
		fmt.Fprintf(&b, "server.%d=%s:%d:%d\n", p.ID, p.Host, p.PeerPort, p.ElectionPort)
	}
	return b.String()
}

func (s *Server) startAdmin() {
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

// ClientAddr is the address clients connect to.
func (s *Server) ClientAddr() string { return s.ln.Addr().String() }

// NodeHost exposes the NodeHost (tests and admin tools).
func (s *Server) NodeHost() *dragonboat.NodeHost { return s.nh }

// Router exposes the router (tests and admin tools).
func (s *Server) Router() *router.Router { return s.router }

// Close shuts the server down and waits for everything it started.
func (s *Server) Close() error {
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

// logTailReads counts the Raft log reads served from memory (or, with false, by the log store).
func (s *Server) logTailReads(memory bool) float64 {
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

// registerGauges exports the state operators watch, computed at scrape time.
func (s *Server) registerGauges() {
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
	for _, id := range s.allShards() {
		s.registerShardGauges(id) // shards added later register theirs when they start
	}
}

// leaderListener tells a data shard's proposer when its leader changes.
type leaderListener struct{ s *Server }

// LeaderUpdated implements raftio.IRaftEventListener; it runs on dragonboat's event goroutine
// and must not block.
func (l leaderListener) LeaderUpdated(info raftio.LeaderInfo) {
	l.s.leaders.changedNow(info.ShardID)
	// One line per change seen by this replica (0: no leader known), so an operator can line up
	// a stall with elections.
	l.s.log.Info("shard leader changed", "shard", info.ShardID, "leader", info.LeaderID, "term", info.Term)
	r := l.s.router
	if r == nil {
		return
	}
	if sh := r.Shard(info.ShardID); sh != nil && sh.Proposer != nil {
		sh.Proposer.LeaderChanged()
		if sh.Control != nil {
			sh.Control.LeaderChanged()
		}
	}
}

// leaderEpochs hands out, per shard, a channel that is closed at the shard's next leader change.
type leaderEpochs struct {
	mu sync.Mutex
	ch map[uint64]chan struct{}
}

func (e *leaderEpochs) changed(shardID uint64) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ch == nil {
		e.ch = map[uint64]chan struct{}{}
	}
	c, ok := e.ch[shardID]
	if !ok {
		c = make(chan struct{})
		e.ch[shardID] = c
	}
	return c
}

func (e *leaderEpochs) changedNow(shardID uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.ch[shardID]; ok {
		close(c)
		delete(e.ch, shardID)
	}
}
