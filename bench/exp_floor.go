package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lni/dragonboat/v4"
	dbclient "github.com/lni/dragonboat/v4/client"
	"github.com/lni/dragonboat/v4/config"
	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/corral/corral/cluster"
)

// The floor experiment: what one Raft round costs on this machine with nothing of Corral's
// server around it. Three dragonboat NodeHosts in this process, floorGroups Raft groups of three
// replicas whose state machines do nothing, and goroutines that each propose one entry of
// --data-size bytes at a time (SyncPropose, as a synchronous client writes): on the first
// group's leader, on a follower (dragonboat forwards the proposal to the leader), or spread over
// the NodeHosts and groups as matrix row 2's clients are (floorLeader ... floorAll4). With
// dragonboat's own log store and transport, with the ones a Corral server runs
// (cluster.RaftExpert: the server log, the sync-saving wrapper, raftnet), and with those and one
// step worker; then with each NodeHost in a process of its own (exp_floor_proc.go). Matrix rows
// 1 and 2 measured right after on the same machine show what Corral's server adds to the round.

// FloorPoint is one measurement of the floor experiment.
type FloorPoint struct {
	Store     string  `json:"store"`
	From      string  `json:"from"`
	Proposers int     `json:"proposers"`
	Proposals int64   `json:"proposals"`
	PerSec    float64 `json:"proposals_per_s"`
	Latency   Summary `json:"latency"`
	Errors    int64   `json:"errors"`
	// Retries are attempts that failed with a temporary error (no leader during an election,
	// busy) and were made again, as a Corral server's proposer does; their time counts in the
	// proposal's latency. Errors are proposals that had not succeeded after 5 s.
	Retries  int64 `json:"retries"`
	DataSize int   `json:"data_size"`
	// Leaders are, on a spread line, the NodeHost (1-3) leading each group at its end.
	Leaders    []uint64 `json:"leaders,omitempty"`
	RTTMs      int      `json:"rtt_ms"`
	ElectionMs int      `json:"election_ms"`
}

// floorRTT, floorElection and floorHeartbeat are a Corral server's defaults (cluster.Config:
// corral.rttMs, corral.electionMs, corral.heartbeatMs).
const (
	floorRTT       = 25 * time.Millisecond
	floorElection  = 200 * time.Millisecond
	floorHeartbeat = 50 * time.Millisecond
	// floorAttempt bounds one attempt of a proposal (proposeRetrying).
	floorAttempt = time.Second
)

func runFloor(ctx context.Context, e *env) error {
	e.noTargets = true
	if id := os.Getenv(floorNodeEnv); id != "" {
		return runFloorNode(ctx, id) // a child of the process lines (exp_floor_proc.go)
	}
	stores := []struct {
		name   string
		expert func(dir string) (config.ExpertConfig, error)
	}{
		{"dragonboat's own (tan, its transport)", func(string) (config.ExpertConfig, error) { return config.ExpertConfig{}, nil }},
		{"a Corral server's (cluster.RaftExpert)", func(dir string) (config.ExpertConfig, error) {
			return cluster.RaftExpert(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}},
		// One step worker for every group of a NodeHost (dragonboat's default is 16): one log
		// save, with one sync, and one round of sends per step for all the groups.
		{"a Corral server's, one step worker (ExecShards 1)", func(dir string) (config.ExpertConfig, error) {
			x, err := cluster.RaftExpert(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
			x.Engine = config.GetDefaultEngineConfig()
			x.Engine.ExecShards = 1
			return x, err
		}},
	}
	proposers := []int{1, e.cfg.Clients}
	var pts []FloorPoint
	for _, st := range stores {
		e.prog.Stage("floor: starting 3 NodeHosts, %s", st.name)
		g, err := startFloorGroup(st.expert)
		if err != nil {
			return fmt.Errorf("floor, %s: %w", st.name, err)
		}
		for _, from := range []string{floorLeader, floorFollower, floorAll1, floorLeaders4, floorAll4} {
			for _, n := range proposers {
				if from != floorLeader && from != floorFollower && n == 1 {
					continue
				}
				label := fmt.Sprintf("floor, %s: %d proposer(s) on the %s", st.name, n, from)
				e.prog.Stage("%s", label)
				p, err := g.measure(ctx, from, n, e.cfg.DataSize, e.cfg.Warmup, e.cfg.Duration)
				if err != nil {
					g.close()
					return fmt.Errorf("%s: %w", label, err)
				}
				p.Store = st.name
				if from == floorLeaders4 || from == floorAll4 {
					p.Leaders = g.leaders()
				}
				pts = append(pts, p)
			}
		}
		g.close()
	}
	pp, err := floorInProcesses(ctx, e, proposers)
	if err != nil {
		return fmt.Errorf("floor, %s: %w", floorProcStore, err)
	}
	pts = append(pts, pp...)
	rows := make([][]string, 0, len(pts))
	csv := make([][]string, 0, len(pts))
	for _, p := range pts {
		from := p.From
		if p.Leaders != nil {
			from += fmt.Sprintf(" (leaders on %v)", p.Leaders)
		}
		rows = append(rows, []string{p.Store, from, itoa(p.Proposers), fi(p.Proposals), ff(p.PerSec, 0),
			msStr(p.Latency.P50Ms) + " / " + msStr(p.Latency.P99Ms), fi(p.Retries), fi(p.Errors)})
		csv = append(csv, []string{p.Store, p.From, itoa(p.Proposers), fi(p.Proposals), ff(p.PerSec, 1),
			ff(p.Latency.P50Ms, 3), ff(p.Latency.P99Ms, 3), fi(p.Retries), fi(p.Errors)})
	}
	e.section(fmt.Sprintf("## One Raft round, no Corral server around it\n\n"+
		"Three dragonboat NodeHosts in one process (loopback), %d Raft groups of three replicas each with a state "+
		"machine that does nothing; each proposer proposes one %d-byte entry at a time (SyncPropose): on the "+
		"first group's leader; on a follower of it (dragonboat forwards the proposal to the leader); proposer j "+
		"on NodeHost j mod 3 to the first group; proposer j to group j mod 4 on that group's leader; or "+
		"proposer j on NodeHost j mod 3 to group j mod 4 (as matrix row 2's clients over 3 servers and "+
		"subtrees over 4 shards). The last lines run each NodeHost in a process of its own (the corral binary "+
		"started three times), as an ensemble does; on the last, row 2's shape, each process runs its third of the "+
		"proposers and their latencies are merged. Raft tick %v, election %v, heartbeat %v, as a Corral server's defaults. "+
		"Warm-up %v, window %v per line. A proposal that fails for the moment (no leader during an election, "+
		"busy) is made again after a backoff, as a Corral server's proposer does, its time counted in its latency "+
		"(retried: how many attempts were made again); errors are proposals that had not succeeded after 5 s.\n\n%s",
		floorGroups, e.cfg.DataSize, floorRTT, floorElection, floorHeartbeat, e.cfg.Warmup, e.cfg.Duration,
		mdTable([]string{"log store and transport", "proposed on", "proposers", "proposals", "per second", "p50 / p99 ms", "retried", "errors"}, rows)))
	if err := e.writeCSV("floor.csv", []string{"store", "from", "proposers", "proposals", "per_s", "p50_ms", "p99_ms", "retries", "errors"}, csv); err != nil {
		return err
	}
	return e.writeJSON("floor.json", pts)
}

// floorGroup is the experiment's three NodeHosts and their Raft group.
type floorGroup struct {
	dir string
	nhs []*dragonboat.NodeHost
}

const floorShard = 1

// floorGroups is how many Raft groups the experiment runs, as a Corral server's 4 data shards.
const floorGroups = 4

// Where the proposers of a line propose.
const (
	floorLeader   = "the first group's leader"
	floorFollower = "a follower of the first group"
	// floorAll1: proposer j on NodeHost j mod 3, to the first group.
	floorAll1 = "all 3 NodeHosts, 1 group"
	// floorLeaders4: proposer j to group j mod 4, on that group's leader.
	floorLeaders4 = "4 groups, each on its leader"
	// floorAll4: proposer j on NodeHost j mod 3 to group j mod 4, as matrix row 2's clients
	// over 3 servers and 16 subtrees over 4 shards.
	floorAll4 = "all 3 NodeHosts, 4 groups"
)

func startFloorGroup(expert func(dir string) (config.ExpertConfig, error)) (*floorGroup, error) {
	cluster.QuietDragonboat()
	dir, err := os.MkdirTemp("", "corral-floor-")
	if err != nil {
		return nil, err
	}
	g := &floorGroup{dir: dir}
	addrs := map[uint64]string{}
	for i := uint64(1); i <= 3; i++ {
		a, err := freeLoopbackAddr()
		if err != nil {
			g.close()
			return nil, err
		}
		addrs[i] = a
	}
	for i := uint64(1); i <= 3; i++ {
		x, err := expert(filepath.Join(dir, fmt.Sprint(i)))
		if err != nil {
			g.close()
			return nil, err
		}
		nh, err := startFloorNode(i, addrs, filepath.Join(dir, fmt.Sprint(i)), x)
		if err != nil {
			g.close()
			return nil, err
		}
		g.nhs = append(g.nhs, nh)
	}
	if err := waitFloorLeaders(g.nhs[0]); err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

// startFloorNode starts NodeHost i of addrs in dir with a replica of every group.
func startFloorNode(i uint64, addrs map[uint64]string, dir string, x config.ExpertConfig) (*dragonboat.NodeHost, error) {
	nh, err := dragonboat.NewNodeHost(config.NodeHostConfig{NodeHostDir: dir, RTTMillisecond: uint64(floorRTT / time.Millisecond),
		RaftAddress: addrs[i], Expert: x})
	if err != nil {
		return nil, err
	}
	for shard := uint64(floorShard); shard < floorShard+floorGroups; shard++ {
		rc := config.Config{ReplicaID: i, ShardID: shard, CheckQuorum: true,
			ElectionRTT: uint64(floorElection / floorRTT), HeartbeatRTT: uint64(floorHeartbeat / floorRTT)}
		if err := nh.StartReplica(addrs, false, func(uint64, uint64) sm.IStateMachine { return noopSM{} }, rc); err != nil {
			nh.Close()
			return nil, err
		}
	}
	return nh, nil
}

// waitFloorLeaders waits until nh knows a leader of every group.
func waitFloorLeaders(nh *dragonboat.NodeHost) error {
	for shard := uint64(floorShard); shard < floorShard+floorGroups; shard++ {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, _, ok, err := nh.GetLeaderID(shard); err == nil && ok {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("group %d: no leader within 30 s", shard)
			}
		}
	}
	return nil
}

// leaders returns, per group, the replica (NodeHost 1-3) that leads it.
func (g *floorGroup) leaders() []uint64 {
	var ids []uint64
	for shard := uint64(floorShard); shard < floorShard+floorGroups; shard++ {
		lid, _, _, _ := g.nhs[0].GetLeaderID(shard)
		ids = append(ids, lid)
	}
	return ids
}

// measure runs n proposers on the group's leader or on a follower for warm-up plus window and
// returns the window's figures.
func (g *floorGroup) measure(ctx context.Context, from string, n, size int, warmup, window time.Duration) (FloorPoint, error) {
	lid, _, ok, err := g.nhs[0].GetLeaderID(floorShard)
	if err != nil || !ok {
		return FloorPoint{}, fmt.Errorf("no leader: %v", err)
	}
	// target returns proposer j's NodeHost and group: the first group's leader or a follower,
	// or, spread, NodeHost j mod 3 and group j mod floorGroups (as row 2's clients over the
	// servers and subtrees over the shards).
	leaders := g.leaders()
	target := func(j int) (*dragonboat.NodeHost, uint64) {
		switch from {
		case floorLeader:
			return g.nhs[lid-1], floorShard
		case floorFollower:
			return g.nhs[lid%3], floorShard // replica lid+1, wrapping: not the leader
		case floorAll1:
			return g.nhs[j%3], floorShard
		case floorLeaders4:
			shard := floorShard + uint64(j%floorGroups)
			return g.nhs[leaders[shard-floorShard]-1], shard
		}
		return g.nhs[j%3], floorShard + uint64(j%floorGroups)
	}
	p, _, err := runProposers(ctx, target, n, size, warmup, window)
	p.From = from
	return p, err
}

// runProposers runs n proposers, proposer j on target(j), each proposing one entry of size
// bytes at a time, for warm-up plus window, and returns the window's figures and latencies.
func runProposers(ctx context.Context, target func(j int) (*dragonboat.NodeHost, uint64), n, size int, warmup, window time.Duration) (FloorPoint, *Hist, error) {
	cmd := make([]byte, size)
	start := time.Now()
	measureFrom, end := start.Add(warmup), start.Add(warmup+window)
	var (
		mu      sync.Mutex
		total   = NewHist()
		errs    int64
		retries int64
		wg      sync.WaitGroup
		firstE  error
	)
	for j := range n {
		wg.Add(1)
		nh, shard := target(j)
		go func() {
			defer wg.Done()
			h := NewHist()
			var myErrs, myRetries int64
			var myFirst error
			s := nh.GetNoOPSession(shard)
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(end) {
					break
				}
				pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				again, err := proposeRetrying(pctx, nh, s, cmd)
				cancel()
				if t0.Before(measureFrom) {
					continue
				}
				myRetries += again
				if err != nil {
					myErrs++
					if myFirst == nil {
						myFirst = err
					}
					continue
				}
				h.Record(time.Since(t0))
			}
			mu.Lock()
			total.Merge(h)
			errs += myErrs
			retries += myRetries
			if firstE == nil {
				firstE = myFirst
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return FloorPoint{}, nil, err
	}
	if total.Count() == 0 {
		return FloorPoint{}, nil, fmt.Errorf("no proposal completed: %v", firstE)
	}
	return FloorPoint{Proposers: n, Proposals: total.Count(), PerSec: float64(total.Count()) / window.Seconds(),
		Latency: total.Summary(), Errors: errs, Retries: retries, DataSize: size,
		RTTMs: int(floorRTT / time.Millisecond), ElectionMs: int(floorElection / time.Millisecond)}, total, nil
}

// proposeRetrying proposes cmd until it is applied, fails for good or ctx ends, as
// router.Proposer does: each attempt has at most floorAttempt (a proposal forwarded to a leader
// that just died is lost and would otherwise wait for ctx), and a temporary failure
// (dragonboat.IsTempError: no leader during an election, the shard busy, the attempt's time up)
// is tried again after a backoff from 5 ms doubling to 200 ms. It returns how many attempts were
// made again. A closed NodeHost or shard ends it.
func proposeRetrying(ctx context.Context, nh *dragonboat.NodeHost, s *dbclient.Session, cmd []byte) (int64, error) {
	var retries int64
	backoff := 5 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, floorAttempt)
		_, err := nh.SyncPropose(actx, s, cmd)
		cancel()
		if err == nil || !dragonboat.IsTempError(err) || ctx.Err() != nil ||
			errors.Is(err, dragonboat.ErrClosed) || errors.Is(err, dragonboat.ErrShardClosed) {
			return retries, err
		}
		retries++
		select {
		case <-ctx.Done():
			return retries, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

func (g *floorGroup) close() {
	for _, nh := range g.nhs {
		if nh != nil {
			nh.Close()
		}
	}
	os.RemoveAll(g.dir)
}

func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// noopSM is a state machine that keeps nothing.
type noopSM struct{}

func (noopSM) Update(e sm.Entry) (sm.Result, error) { return sm.Result{Value: e.Index}, nil }
func (noopSM) Lookup(any) (any, error)              { return nil, nil }
func (noopSM) SaveSnapshot(io.Writer, sm.ISnapshotFileCollection, <-chan struct{}) error {
	return nil
}
func (noopSM) RecoverFromSnapshot(io.Reader, []sm.SnapshotFile, <-chan struct{}) error { return nil }
func (noopSM) Close() error                                                            { return nil }
