package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/config"
	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral/corral/replica"
	"github.com/corral/corral/router"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// Adding data shards online (docs/design.md §12). The root data shard's replicated state lists
// the data shards added after the first start (shard.AddedShard: Raft group id, zxid tag,
// initial voters and observers). An operator asks any server (POST /shards/add); that server
// proposes the record to the root shard (AddShard). Every server learns each record when its
// replica of the root shard applies it, or opens with it persisted: the router adds the shard's
// handle and proposers at once (router.ShardHooks, on the apply goroutine) and hands the start
// of the replica to the shard starter, a goroutine of this server (runShardStarter), because
// dragonboat does not allow starting a replica from an apply goroutine.

// maxDataShards caps an ensemble's data shards, those of the first start and those added
// online together: the same cap as corral.shards (Config.Validate), well inside the 255 zxid
// tags.
const maxDataShards = 200

// ErrAddShardRefused: a shard cannot be added as asked (the cap is reached, or the caller's
// expected count is stale); nothing changed.
var ErrAddShardRefused = errors.New("cluster: add shard refused")

// addedState is this server's side of the added shards. mu is a leaf lock.
type addedState struct {
	mu struct {
		sync.Mutex
		queue   []shard.AddedShard // records whose replica the starter has yet to start
		started map[uint64]shard.AddedShard
	}
	wake    chan struct{} // capacity 1: the starter has work
	raftCfg func(shardID uint64) config.Config
	metrics *router.Metrics
}

// shardHooks connects the router to this server: the proposers of a shard handle the router
// adds at run time, and the start of an added shard's replica.
func (s *Node) shardHooks() router.ShardHooks {
	s.added.wake = make(chan struct{}, 1)
	return router.ShardHooks{
		Proposers: s.makeProposers,
		Start: func(rec shard.AddedShard) {
			s.added.mu.Lock()
			s.added.mu.queue = append(s.added.mu.queue, rec)
			s.added.mu.Unlock()
			select {
			case s.added.wake <- struct{}{}:
			default:
			}
		},
	}
}

// makeProposers creates a data shard's proposer and control proposer. Both exist before the
// shard's replica starts: the leader listener may call them.
func (s *Node) makeProposers(sh *router.Shard) {
	sh.Taps = shard.NewTaps()
	sh.Proposer = router.NewProposer(sh.ID, s.proposeFunc(sh.ID), router.ProposerOptions{Log: s.log, Metrics: s.added.metrics, Quota: s.quotaMode, Taps: sh.Taps})
	sh.Control = router.NewProposer(sh.ID, s.proposeFunc(sh.ID), router.ProposerOptions{Log: s.log, Metrics: s.added.metrics, Control: true, Quota: s.quotaMode})
}

// startDataShard starts this server's replica of a data shard.
func (s *Node) startDataShard(id uint64, tag uint8, ownsRoot bool, initial map[uint64]dragonboat.Target, join bool) error {
	scfg := replica.Config{ShardID: id, Tag: tag, OwnsRoot: ownsRoot,
		Dir: filepath.Join(s.cfg.DataDir, "corral", "shards", fmt.Sprintf("%d", id)), ExtendedTypes: s.cfg.ExtendedTypes,
		Listener: shardListener{s}, Logger: s.log} // the replica adds the shard attribute
	s.shardTestingKnobs(&scfg)
	s.syncDirty(&scfg)
	if sh := s.router.Shard(id); sh != nil {
		scfg.Taps = sh.Taps
	}
	if ownsRoot {
		scfg.Root = "/"
	}
	create := func(uint64, uint64) sm.IOnDiskStateMachine {
		m := replica.NewMachine(scfg)
		s.replicas.add(id, m)
		return m
	}
	return s.nh.StartOnDiskReplica(initial, join, create, s.added.raftCfg(id))
}

// bootstrapAdded is bootstrap for a data shard added online: a replica this NodeHost ran before
// restarts from its log; a voter of the record starts with the record's voters (every one of
// them with the identical map, as dragonboat requires); any other server — an observer, a
// server added to the ensemble after the shard — joins and waits until a member adds it.
func bootstrapAdded(nh *dragonboat.NodeHost, cfg *Config, rec shard.AddedShard) (map[uint64]dragonboat.Target, bool) {
	if nh.HasNodeInfo(rec.ID, cfg.MyID) {
		return nil, false
	}
	if _, voter := rec.Voters[cfg.MyID]; voter && !cfg.Observer() {
		return maps.Clone(rec.Voters), false
	}
	return nil, true
}

// runShardStarter starts the replicas of added shards the router learned of, one after the
// other, until the server stops (s.ctx; Close waits for it through s.wg). A start that fails is
// tried again a second later.
func (s *Node) runShardStarter() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.added.wake:
		}
		for s.ctx.Err() == nil {
			s.added.mu.Lock()
			if len(s.added.mu.queue) == 0 {
				s.added.mu.Unlock()
				break
			}
			rec := s.added.mu.queue[0]
			s.added.mu.queue = s.added.mu.queue[1:]
			s.added.mu.Unlock()
			if err := s.startAdded(rec); err != nil {
				s.log.Error("cannot start the replica of a data shard added online; retrying", "shard", rec.ID, "err", err)
				s.added.mu.Lock()
				s.added.mu.queue = append([]shard.AddedShard{rec}, s.added.mu.queue...)
				s.added.mu.Unlock()
				select {
				case <-s.ctx.Done():
					return
				case <-time.After(time.Second):
				}
			}
		}
	}
}

// startAdded starts this server's replica of an added shard.
func (s *Node) startAdded(rec shard.AddedShard) error {
	initial, join := bootstrapAdded(s.nh, &s.cfg, rec)
	err := s.startDataShard(rec.ID, rec.Tag, false, initial, join)
	if err != nil && !errors.Is(err, dragonboat.ErrShardAlreadyExist) {
		return err
	}
	s.added.mu.Lock()
	if s.added.mu.started == nil {
		s.added.mu.started = map[uint64]shard.AddedShard{}
	}
	s.added.mu.started[rec.ID] = rec
	s.added.mu.Unlock()
	s.registerShardGauges(rec.ID)
	s.log.Info("started the replica of a data shard added online", "shard", rec.ID, "tag", rec.Tag, "join", join)
	return nil
}

// addedStarted returns the record of an added shard whose replica this server started.
func (s *Node) addedStarted(id uint64) (shard.AddedShard, bool) {
	s.added.mu.Lock()
	defer s.added.mu.Unlock()
	rec, ok := s.added.mu.started[id]
	return rec, ok
}

// runningShards returns the ids of the data shards whose replicas this server runs: those of the
// first start and the added ones it started (the router may know an added shard whose replica
// is not started yet).
func (s *Node) runningShards() []uint64 {
	initial := s.router.InitialShards()
	var out []uint64
	for _, sh := range s.router.Shards() {
		if _, ok := s.addedStarted(sh.ID); ok || slices.Contains(initial, sh.ID) {
			out = append(out, sh.ID)
		}
	}
	return out
}

// AddShard adds a data shard to the ensemble: a new Raft group whose initial voters are the
// root shard's voters and whose observers are the root shard's non-voting replicas, with the
// next free id and tag. It proposes the record to the root shard and returns once this server
// runs the new shard's replica and the shard has a leader. expect, if positive, is the number
// of data shards the caller believes exist: when it is stale (a retried request that did add
// a shard, or another add) nothing is added and ErrAddShardRefused is returned. The new shard
// serves nothing until a subtree is moved onto it (placement never hashes onto it).
func (s *Node) AddShard(ctx context.Context, expect int) (shard.AddedShard, error) {
	root := s.router.Root()
	for {
		// The local view must be current: the record's id and tag, and the count the root
		// shard compares with, are decided from it.
		if err := s.Sync(ctx, root.ID); err != nil {
			return shard.AddedShard{}, fmt.Errorf("cluster: catching up with the root shard: %w", err)
		}
		list := root.View().AddedShards()
		initial := s.router.InitialShards()
		count := len(initial) + len(list)
		if expect > 0 && expect != count {
			return shard.AddedShard{}, fmt.Errorf("%w: expected %d data shards, there are %d (a shard was added since; see /shards/list)", ErrAddShardRefused, expect, count)
		}
		if count >= maxDataShards {
			return shard.AddedShard{}, fmt.Errorf("%w: the ensemble has %d data shards, the most it can have", ErrAddShardRefused, count)
		}
		rec := shard.AddedShard{ID: DataShardID(len(initial) - 1), Tag: uint8(len(initial))}
		for _, o := range list {
			rec.ID, rec.Tag = max(rec.ID, o.ID), max(rec.Tag, o.Tag)
		}
		rec.ID++
		rec.Tag++
		m, err := s.shardMembership(ctx, root.ID)
		if err != nil {
			return shard.AddedShard{}, fmt.Errorf("cluster: reading the root shard's membership: %w", err)
		}
		rec.Voters, rec.NonVoting = maps.Clone(m.Nodes), maps.Clone(m.NonVotings)
		a := shard.AddShard{Prev: len(list), Shard: rec}
		res, err := submitWait(ctx, root.Control, shard.Op{Code: shard.OpAddShard, Body: a.AppendTo(nil)})
		if err != nil {
			return shard.AddedShard{}, fmt.Errorf("cluster: proposing the new shard (ask again with expect=%d: it was added if the count grew): %w", count, err)
		}
		rep, err := shard.DecodeAddShardReply(res.Body)
		if err != nil {
			return shard.AddedShard{}, err
		}
		switch rep.Outcome {
		case shard.AddShardConflict:
			if expect > 0 {
				return shard.AddedShard{}, fmt.Errorf("%w: expected %d data shards, another shard was added meanwhile", ErrAddShardRefused, expect)
			}
			continue // another server added one first: decide again
		case shard.AddShardRefused:
			return shard.AddedShard{}, fmt.Errorf("%w: the root shard refused the record %+v", ErrAddShardRefused, rec)
		}
		return rec, s.waitShardServing(ctx, rec.ID)
	}
}

// waitShardServing waits until this server runs a replica of the data shard, the replica has
// opened and the shard has a leader.
func (s *Node) waitShardServing(ctx context.Context, id uint64) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if sh := s.router.Shard(id); sh != nil {
			if _, _, ok, err := s.nh.GetLeaderID(id); err == nil && ok && sh.View() != nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: shard %d was added but has no leader here yet: %w", id, ctx.Err())
		case <-t.C:
		}
	}
}

// submitWait submits one op to a proposer and waits for its result.
func submitWait(ctx context.Context, p *router.Proposer, op shard.Op) (shard.OpResult, error) {
	type result struct {
		res shard.OpResult
		err error
	}
	got := make(chan result, 1)
	p.Submit(&router.Request{Op: op, Done: func(res shard.OpResult, err error) { got <- result{res, err} }})
	select {
	case r := <-got:
		if r.err == nil && r.res.Err != wire.ErrOK {
			r.err = r.res.Err
		}
		return r.res, r.err
	case <-ctx.Done():
		return shard.OpResult{}, ctx.Err()
	}
}

// describeAdded formats a record for the admin pages.
func describeAdded(rec shard.AddedShard) string {
	return fmt.Sprintf("shard=%d tag=%d voters=%s nonvoting=%s", rec.ID, rec.Tag, idList(rec.Voters), idList(rec.NonVoting))
}

// serveShardsAdmin serves POST /shards/add[?expect=N][&timeout=60s] (answers "added shard=N
// tag=T voters=... nonvoting=..."; 409 when refused, 500 when the outcome is unknown) and GET
// /shards/list (one line per data shard: id, tag, whether it was added online, whether this
// server runs it, its leader).
func (s *Node) serveShardsAdmin(w http.ResponseWriter, r *http.Request) {
	switch strings.TrimPrefix(r.URL.Path, "/shards/") {
	case "list":
		if r.Method != http.MethodGet {
			http.Error(w, "GET /shards/list", http.StatusMethodNotAllowed)
			return
		}
		io.WriteString(w, s.shardsText())
	case "add":
		if r.Method != http.MethodPost {
			http.Error(w, "POST /shards/add[?expect=N]", http.StatusMethodNotAllowed)
			return
		}
		ctx, cancel, expect, ok := addShardParams(w, r)
		if !ok {
			return
		}
		defer cancel()
		s.log.Info("adding a data shard", "expect", expect)
		rec, err := s.AddShard(ctx, expect)
		if err != nil {
			addShardFailed(w, s, err)
			return
		}
		s.log.Info("added a data shard", "shard", rec.ID, "tag", rec.Tag, "voters", idList(rec.Voters))
		fmt.Fprintf(w, "added %s\n", describeAdded(rec))
	default:
		http.Error(w, "want /shards/list or /shards/add", http.StatusNotFound)
	}
}

// addShardParams reads the optional expect and timeout parameters of a request that adds a
// shard; it answers 400 itself when they are malformed.
func addShardParams(w http.ResponseWriter, r *http.Request) (context.Context, context.CancelFunc, int, bool) {
	q := r.URL.Query()
	timeout := 60 * time.Second
	if v := q.Get("timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			http.Error(w, "timeout: want a positive duration such as 30s", http.StatusBadRequest)
			return nil, nil, 0, false
		}
		timeout = d
	}
	expect := 0
	if v := q.Get("expect"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			http.Error(w, "expect: want the number of data shards the ensemble has now", http.StatusBadRequest)
			return nil, nil, 0, false
		}
		expect = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	return ctx, cancel, expect, true
}

// addShardFailed answers a failed add: 409 when refused (nothing changed), 500 otherwise.
func addShardFailed(w http.ResponseWriter, s *Node, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, ErrAddShardRefused) {
		code = http.StatusConflict
	}
	s.log.Warn("adding a data shard failed", "err", err)
	http.Error(w, err.Error(), code)
}

// shardsText is the /shards/list page.
func (s *Node) shardsText() string {
	added := map[uint64]shard.AddedShard{}
	for _, rec := range s.router.AddedShards() {
		added[rec.ID] = rec
	}
	running := s.runningShards()
	var b strings.Builder
	for _, sh := range s.router.Shards() {
		origin := "initial"
		if _, ok := added[sh.ID]; ok {
			origin = "added"
		}
		lid, term, ok, _ := s.nh.GetLeaderID(sh.ID)
		fmt.Fprintf(&b, "shard=%d tag=%d origin=%s running=%v leader=%d term=%d has_leader=%v", sh.ID, sh.Tag(), origin,
			slices.Contains(running, sh.ID), lid, term, ok)
		if rec, ok := added[sh.ID]; ok {
			fmt.Fprintf(&b, " voters=%s nonvoting=%s", idList(rec.Voters), idList(rec.NonVoting))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// registerShardGauges exports a shard's leader gauges (once per shard; a second call is a
// no-op).
func (s *Node) registerShardGauges(id uint64) {
	labels := prometheus.Labels{"shard": fmt.Sprint(id)}
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_shard_has_leader", ConstLabels: labels,
			Help: "1 if this server knows a leader for the shard."}, func() float64 {
			if _, _, ok, err := s.nh.GetLeaderID(id); err == nil && ok {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_shard_is_leader", ConstLabels: labels,
			Help: "1 if this server leads the shard."}, func() float64 {
			if lid, _, ok, err := s.nh.GetLeaderID(id); err == nil && ok && lid == s.cfg.MyID {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_shard_term", ConstLabels: labels,
			Help: "The shard's Raft term as this server knows it."}, func() float64 {
			_, term, _, _ := s.nh.GetLeaderID(id)
			return float64(term)
		}),
	} {
		var already prometheus.AlreadyRegisteredError
		if err := s.reg.Register(c); err != nil && !errors.As(err, &already) {
			s.log.Warn("cannot register a shard gauge", "shard", id, "err", err)
		}
	}
}

// waitOpened waits until this server's replica of a data shard has opened (published its first
// view). The router can know an added shard before its replica starts (a route to it arrived
// before the root shard's record); a catch-up there waits for the replica instead of failing.
// Other shards, and shards already open, return at once.
func (s *Node) waitOpened(ctx context.Context, shardID uint64) error {
	sh := s.router.Shard(shardID)
	if sh == nil || sh.View() != nil {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	select {
	case <-sh.Ready():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cluster: the replica of shard %d has not started: %w", shardID, ctx.Err())
	}
}

// stopProposers stops every data shard's proposers (idempotent).
func (s *Node) stopProposers() {
	if s.router == nil {
		return
	}
	for _, sh := range s.router.Shards() {
		if sh.Proposer != nil {
			sh.Proposer.Stop()
		}
		if sh.Control != nil {
			sh.Control.Stop()
		}
	}
}

// startedAdded returns the records of the added shards whose replicas this server started, by
// id.
func (s *Node) startedAdded() []shard.AddedShard {
	s.added.mu.Lock()
	defer s.added.mu.Unlock()
	out := make([]shard.AddedShard, 0, len(s.added.mu.started))
	for _, id := range sortedKeys(s.added.mu.started) {
		out = append(out, s.added.mu.started[id])
	}
	return out
}
