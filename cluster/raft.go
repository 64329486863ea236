package cluster

// This node's Raft groups: dragonboat's NodeHost, the meta shard and the data shards, proposals
// and catch-up rounds, waiting until every group serves, and the leader listener.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/config"
	dblogger "github.com/lni/dragonboat/v4/logger"
	"github.com/lni/dragonboat/v4/raftio"
	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/lni/vfs"

	"github.com/corral/corral/raftnet"
	"github.com/corral/corral/router"
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

// QuietDragonboat lowers dragonboat's own logging to errors, once per process
// (CORRAL_DRAGONBOAT_LOG=info keeps its informational messages, for debugging).
func QuietDragonboat() {
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

// raftExpert returns the Raft log store, its file system and the transport a server's NodeHost
// uses. tan, dragonboat's append-only log store: the pebble-based default spent about a quarter
// of a write-heavy server's CPU compacting the Raft log (docs/storage.md). raftnet: dragonboat's
// framing, but a restarted peer's stale links are replaced instead of tripping dragonboat's
// per-peer circuit breaker (raftnet/doc.go). logFileFS: tan's log files allocated up front and
// synced with fdatasync (logfile.go), and a torn write at the end of one mended before the store
// opens (logtail.go). The log store: one log for all of the server's replicas,
// saved with group commit (serverlog.go), or a log per replica in a directory written that way;
// wrapped so that an update with an unchanged Raft state costs no sync (logdb.go).
func raftExpert(nodeHostDir string, log *slog.Logger, tail *atomic.Pointer[tailCache], tailBytes uint64, tls *tlsconf.Source) (config.ExpertConfig, error) {
	logStore, err := logStoreFor(nodeHostDir)
	if err != nil {
		return config.ExpertConfig{}, err
	}
	return config.ExpertConfig{FS: newLogFileFS(vfs.Default, log), LogDB: logDBConfig(),
		LogDBFactory:     stateFillingFactory{inner: tornTailFactory{inner: logStore}, tail: tail, tailBytes: tailBytes},
		TransportFactory: raftnet.Factory{Log: log, TLS: tls}}, nil
}

// RaftExpert is the NodeHost expert configuration a server runs its Raft groups with (its log
// store and transport, raftExpert), with the default tail budget and no TLS, for programs that
// measure the Raft layer alone: `corral bench floor`.
func RaftExpert(nodeHostDir string, log *slog.Logger) (config.ExpertConfig, error) {
	return raftExpert(nodeHostDir, log, nil, tailBudget, nil)
}

func (s *Node) startRaft() error {
	cfg := s.cfg
	base := filepath.Join(cfg.DataDir, "corral")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	self := cfg.Self()
	tick, electionTicks, heartbeatTicks := cfg.raftTicks()
	nodeHostDir := filepath.Join(base, "nodehost")
	expert, err := raftExpert(nodeHostDir, s.log, &s.logTail, cfg.RaftTailBytes, s.startQuorumTLS())
	if err != nil {
		return err
	}
	nhc := config.NodeHostConfig{
		NodeHostDir:         nodeHostDir,
		RTTMillisecond:      uint64(tick / time.Millisecond),
		RaftAddress:         self.RaftAddress(),
		Expert:              expert,
		RaftEventListener:   leaderListener{s},
		EnableMetrics:       true,
		MaxSendQueueSize:    cfg.RaftQueueBytes,
		MaxReceiveQueueSize: cfg.RaftQueueBytes,
	}
	if cfg.DataLogDir != "" {
		nhc.WALDir = filepath.Join(cfg.DataLogDir, "corral-wal")
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
	if err := s.applyTestingKnobs(); err != nil {
		return err
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
		return config.Config{ShardID: shardID, ReplicaID: cfg.MyID, ElectionRTT: electionTicks, HeartbeatRTT: heartbeatTicks,
			CheckQuorum: cfg.CheckQuorum, PreVote: true, SnapshotEntries: cfg.SnapshotEntries, CompactionOverhead: cfg.SnapshotEntries / 4,
			MaxInMemLogSize: 256 << 20, IsNonVoting: cfg.Observer()}
	}

	s.added.raftCfg, s.added.metrics = raftCfg, pm
	s.wg.Add(1)
	go s.runShardStarter() // before the root shard opens: it may list added shards
	s.syncReqs.pending, s.syncReqs.wake = map[uint64]bool{}, make(chan struct{}, 1)
	s.wg.Add(1)
	go s.runSyncRequester()

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
func (s *Node) proposeFunc(shardID uint64) router.ProposeFunc {
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

// closeOnShards ends a closed session on every data shard. With fence, in two rounds: first
// every shard records the session's tombstone (from then on it refuses every write of the
// session with SESSIONEXPIRED), then every shard deletes the session's ephemerals. So no shard
// applies a write of the session after any of its ephemerals is gone: a lock holder's late
// write cannot land after another client saw the lock released and took it (docs/design.md
// §4, rule 5). Without fence (the session manager knows no write of the session is left to
// apply anywhere), the second round alone, which records the tombstone too; only on the shards
// the session wrote to when written is Complete, and then, if a subtree moved meanwhile (the
// mount table's generation is not written.Gen any more: an ephemeral may have moved with its
// subtree to a shard the session never wrote to), on every shard too. A move that carried an
// ephemeral away before the close reached its shard is applied here before that close
// (each replica applies in log order, and the mount table changes as the move applies).
// A non-zero owner makes that round's ops conditional on the session's ownership epoch
// (shard.CloseSessionIfOwner); a shard's refusal is returned as session.ErrMovedAway.
func (s *Node) closeOnShards(ctx context.Context, id int64, fence bool, owner uint64, written session.Written) error {
	if fence {
		if err := s.closeRound(ctx, id, shard.CloseSessionFence()); err != nil {
			return err
		}
		return s.closeRound(ctx, id, nil)
	}
	var body []byte
	if owner != 0 {
		body = shard.CloseSessionIfOwner(owner)
	}
	err := func() error {
		if written.Complete {
			op := shard.Op{Session: id, Code: wire.OpCloseSession, Body: body}
			s.closeOps.Add(uint64(len(written.Shards)))
			if err := s.router.OnShards(ctx, written.Shards, op); err != nil {
				return err
			}
			if s.router.MountGen() == written.Gen {
				return nil
			}
		}
		return s.closeRound(ctx, id, body)
	}()
	if errors.Is(err, wire.ErrSessionMoved) {
		return fmt.Errorf("%w: %w", session.ErrMovedAway, err)
	}
	return err
}

func (s *Node) closeRound(ctx context.Context, id int64, body []byte) error {
	s.closeOps.Add(uint64(len(s.router.Shards())))
	return s.router.OnEveryShard(ctx, shard.Op{Session: id, Code: wire.OpCloseSession, Body: body})
}

// Sync makes this replica of shardID catch up with its leader (ReadIndex). An attempt that gets
// no answer (its leader just died) is retried after metaAttempt.
func (s *Node) Sync(ctx context.Context, shardID uint64) error {
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

type metaRaft struct{ s *Node }

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
func (s *Node) retryAttempts(ctx context.Context, shardID uint64, f func(context.Context) error) error {
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
func (s *Node) waitReady(ctx context.Context) error {
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
					if sh := s.router.Shard(id); sh != nil {
						// Until the first round of refreshReplicasOnce, this is what shows the
						// replica reached its quorum (server/stuck.go's cut-off rule).
						sh.NoteReachedQuorum(t0)
					}
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

// leaderListener tells a data shard's proposer when its leader changes.
type leaderListener struct{ s *Node }

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
