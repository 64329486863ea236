package faulttest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/internal/linearize"
	"github.com/corral/corral/internal/nemesis"
	"github.com/corral/corral/internal/slowdisk"
	"github.com/corral/corral/router"
)

// The robustness suite (Jepsen / etcd tests/robustness style): one randomized run starts a
// 3-server ensemble (Corral with two data shards, or Apache ZooKeeper 3.8; tickTime 1 s,
// 4 s sessions), runs a mixed workload of go-zookeeper clients spread over the servers (the
// register, sequential-name and watch clients start on their home server and fail over to the
// others in a fixed order; the lock and ephemeral clients are pinned to theirs, so that a fault
// of their server outlives their sessions and leaves stale lock holders), injects one fault
// (a nemesis) for an outage of one to three session timeouts, heals it, keeps the workload going
// until every client has made progress again, and then checks the history:
//
//   - registers: setData/getData/sync+getData/create/delete on keys under top-level subtrees of
//     both data shards, recorded with internal/linearize: porcupine (writes and synced reads are
//     linearizable), ValidateNoLostWrites against final synced reads on every server,
//     ValidateReadsNeverGoBack per session;
//   - sequential names: creates of sequential children; every acknowledged name is unique and
//     present at the end with the data of its create, no create is applied twice, no child
//     comes from a create that was never sent;
//   - lock with a fencing token: an ephemeral-sequential lock (lowest child holds); the holder
//     writes "its sequence number" into a resource znode by setData with the version it read,
//     refusing when the resource holds a higher token; in the resource's version order the
//     tokens never decrease and each holder's writes form one block, and a version never carries
//     two different values (the resource is recorded too, so porcupine checks it);
//   - ephemerals: a client that was never told its session expired finds its ephemeral at the
//     end (owned by its session); no ephemeral whose session expired or was closed survives;
//   - watch delivery: a writer sets a key with increasing values, a watcher on another server
//     re-reads on every event: an event's read shows a newer version than the read that armed
//     it (no spurious or duplicate event), a session never reads an older version, and after
//     the fault the watcher sees the final version;
//   - pipelined writes across shards (robust_pipe_test.go, Corral's client): a session sends
//     bursts of creates round-robin over subtrees of both data shards; every acknowledged
//     create is there, and the creates there are a prefix of what the session sent.
//
// Every run logs the nemesis, the victim, the outage, the operations per checker, the
// violations and the longest unavailability (the longest interval without a successful
// operation of one client, over the whole load; also over the clients that fail over only).
// The assertions are about the history; the only timing bounds are liveness bounds (every
// client succeeds again within 60 s of the heal, the watcher sees the final version within
// 30 s), several times what a healthy run needs.

const (
	rbTickTime       = time.Second
	rbSessionTimeout = 4 * time.Second // 4 ticks
	rbShards         = 2               // corral.shards
	rbWarmup         = 2 * time.Second // load before the fault
	rbAfterHeal      = 3 * time.Second // load after the heal, at least
	// Liveness bounds, not timing assertions: several times what a healthy run needs on the
	// loaded 2-core machine.
	rbProgressBound = 60 * time.Second // every client completes an operation after the heal
	rbWatchBound    = 30 * time.Second // the watcher sees the final version
	rbEphGoneBound  = 20 * time.Second // ephemerals of closed sessions are gone
	// rbShortOutage is the outage of the short form (1.25 session timeouts).
	rbShortOutage = 5 * time.Second
)

// rbUIDs are the user ids the servers run as in partition runs (root only): each server its
// own, so that whichever server turns out to be the victim (a data shard's leader is known
// only after the start) can be cut off by internal/nemesis, which tells packets apart by owner.
var rbUIDs = map[int]int{0: nobody, 1: nobody - 1, 2: nobody - 2}

// rbEnsemble is what a run needs of the server processes: Corral's or Apache ZooKeeper's.
type rbEnsemble interface {
	ensemble
	ServerDir(i int) string
	Kill(i int) error
	Start(ctx context.Context, i int) error
	Running(i int) bool
}

// rbTarget is the system under test.
type rbTarget struct {
	name string
	// start starts 3 servers: under the given user ids (if any), with the extra zoo.cfg keys
	// of serverCfg per server (index 0..2).
	start  func(ctx context.Context, uids map[int]int, serverCfg map[int]map[string]string) (rbEnsemble, error)
	report func(t *testing.T, violations []string) // failOn, or logViolations for ZooKeeper
	// leaderOf returns the server leading the Raft group that holds path (Corral: the data
	// shard of its top-level name; ZooKeeper: its leader).
	leaderOf func(ctx context.Context, e rbEnsemble, path string) (int, error)
}

var rbDataShards = []uint64{cluster.DataShardID(0), cluster.DataShardID(1)}

var rbCorral = rbTarget{
	name: "corral",
	start: func(ctx context.Context, uids map[int]int, serverCfg map[int]map[string]string) (rbEnsemble, error) {
		return corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: rbShards, TickTime: rbTickTime,
			Config: map[string]string{"corral.placement": "hash"}, ServerUID: uids, ServerConfig: serverCfg})
	},
	report: failOn,
	leaderOf: func(ctx context.Context, e rbEnsemble, path string) (int, error) {
		ce := e.(*corralproc.Ensemble)
		top := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 2)[0]
		shard := router.TopLevelShard(top, rbDataShards)
		for i := 0; i < ce.Size(); i++ {
			if !ce.Running(i) {
				continue
			}
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			ls, err := ce.ShardLeaders(qctx, i)
			cancel()
			if err != nil {
				continue
			}
			for _, l := range ls {
				if l.Shard == shard && l.HasLeader && l.Leader >= 1 && int(l.Leader) <= ce.Size() {
					return int(l.Leader) - 1, nil
				}
			}
		}
		return -1, fmt.Errorf("no server names a leader of shard %d (%s)", shard, path)
	},
}

var rbZooKeeper = rbTarget{
	name: "zookeeper",
	start: func(ctx context.Context, uids map[int]int, serverCfg map[int]map[string]string) (rbEnsemble, error) {
		return apachezk.Start(ctx, apachezk.Options{Servers: 3, TickTime: rbTickTime, ServerUID: uids, ServerConfig: serverCfg})
	},
	report: logViolations,
	leaderOf: func(_ context.Context, e rbEnsemble, _ string) (int, error) {
		if l := e.(*apachezk.Ensemble).Leader(); l >= 0 {
			return l, nil
		}
		return -1, errors.New("no ZooKeeper leader")
	},
}

// rbTargetFromEnv is Corral, or Apache ZooKeeper with CORRAL_ROBUST_TARGET=zookeeper.
func rbTargetFromEnv(t *testing.T) rbTarget {
	switch v := os.Getenv("CORRAL_ROBUST_TARGET"); v {
	case "", "corral":
		return rbCorral
	case "zookeeper":
		if err := apachezk.Available(); err != nil {
			t.Skip(err)
		}
		return rbZooKeeper
	default:
		t.Fatalf("CORRAL_ROBUST_TARGET=%q: want corral or zookeeper", v)
	}
	panic("unreachable")
}

// rbNemesis is one kind of fault. inject starts it on the run's ensemble and returns the
// victim (for the log) and the heal, which the caller calls once the outage is over (and
// defers: it must be safe to call twice).
type rbNemesis struct {
	name      string
	partition bool // iptables: needs root, the servers run under rbUIDs
	disk      bool // each server's dataDir on a disk of its own (robust_disk_test.go)
	inject    func(r *rbRun) (victim string, heal func() error, err error)
}

// once makes a heal idempotent.
func once(heal func() error) func() error {
	var o sync.Once
	var err error
	return func() error {
		o.Do(func() { err = heal() })
		return err
	}
}

func rbPause() rbNemesis {
	return rbNemesis{name: "pause", inject: func(r *rbRun) (string, func() error, error) {
		v := r.rng.IntN(r.e.Size())
		pid := r.e.Pid(v)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("server %d", v+1), once(func() error { return syscall.Kill(pid, syscall.SIGCONT) }), nil
	}}
}

// isolate cuts server v's Raft traffic with its peers in direction d.
func (r *rbRun) isolate(v int, d nemesis.Direction) (func() error, error) {
	var peers []int
	for j := 0; j < r.e.Size(); j++ {
		if j != v {
			peers = append(peers, r.e.QuorumPorts(j)...)
		}
	}
	p, err := nemesis.Isolate(r.e.QuorumPorts(v), rbUIDs[v], peers, d)
	if err != nil {
		return nil, err
	}
	return once(p.Heal), nil
}

func rbPartition(d nemesis.Direction) rbNemesis {
	return rbNemesis{name: "partition-" + d.String(), partition: true, inject: func(r *rbRun) (string, func() error, error) {
		v := r.rng.IntN(r.e.Size())
		heal, err := r.isolate(v, d)
		return fmt.Sprintf("server %d", v+1), heal, err
	}}
}

// leaderOf returns the server leading path's Raft group (ZooKeeper: its leader), asking
// again for up to 15 s while there is none.
func (r *rbRun) leaderOf(path string) (v int, err error) {
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if v, err = r.target.leaderOf(r.ctx, r.e, path); err == nil || time.Now().After(deadline) {
			return v, err
		}
	}
}

// rbPartitionLeader cuts off (both directions) the server that leads the data shard of the
// first register subtree (ZooKeeper: its leader).
func rbPartitionLeader() rbNemesis {
	return rbNemesis{name: "partition-leader", partition: true, inject: func(r *rbRun) (string, func() error, error) {
		path := r.regKeys[0]
		v, err := r.leaderOf(path)
		if err != nil {
			return "", nil, err
		}
		heal, err := r.isolate(v, nemesis.Both)
		return fmt.Sprintf("server %d (leads %s's group)", v+1, path), heal, err
	}}
}

// rbBridge cuts the server that leads the data shard of the first register subtree off from
// one other server only, both ways; the third server still reaches both (Jepsen's bridge on
// three servers). The leader keeps a quorum through the bridge, while the cut-off follower
// hears from it only what the bridge relays: nothing, in Raft.
func rbBridge() rbNemesis {
	return rbNemesis{name: "bridge", partition: true, inject: func(r *rbRun) (string, func() error, error) {
		path := r.regKeys[0]
		v, err := r.leaderOf(path)
		if err != nil {
			return "", nil, err
		}
		w := (v + 1 + r.rng.IntN(r.e.Size()-1)) % r.e.Size()
		p, err := nemesis.Cut(nemesis.Server{Ports: r.e.QuorumPorts(v), UID: rbUIDs[v]},
			nemesis.Server{Ports: r.e.QuorumPorts(w), UID: rbUIDs[w]})
		if err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("servers %d (leads %s's group) and %d cut apart", v+1, path, w+1), once(p.Heal), nil
	}}
}

func rbKill() rbNemesis {
	return rbNemesis{name: "kill", inject: func(r *rbRun) (string, func() error, error) {
		v := r.rng.IntN(r.e.Size())
		if err := r.e.Kill(v); err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("server %d", v+1), once(func() error { return r.restart(v) }), nil
	}}
}

// restart starts the killed server v again. Its Raft port cannot move (the peers know it); if
// something else took it while the server was down (another test's process, an outgoing
// connection's ephemeral port on this shared machine), the start is retried for a while.
func (r *rbRun) restart(v int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := r.e.Start(r.ctx, v)
		if err == nil || !errors.Is(err, corralproc.ErrPortInUse) || time.Now().After(deadline) {
			return err
		}
		r.t.Logf("server %d: its port is taken, starting again in 1 s (%v)", v+1, strings.SplitN(err.Error(), "\n", 2)[0])
		r.e.Kill(v) // reap the exited process, if the ensemble still counts it as running
		time.Sleep(time.Second)
	}
}

// rbKillAll SIGKILLs every server, then starts them all together (a server of a 3-ensemble
// waits for a quorum before it serves).
func rbKillAll() rbNemesis {
	return rbNemesis{name: "kill-all", inject: func(r *rbRun) (string, func() error, error) {
		n := r.e.Size() // the servers of now: an observer added during the outage is not killed
		for i := 0; i < n; i++ {
			if err := r.e.Kill(i); err != nil {
				return "", nil, err
			}
		}
		return "all servers", once(func() error {
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Add(1)
				go func() { defer wg.Done(); errs[i] = r.restart(i) }()
			}
			wg.Wait()
			return errors.Join(errs...)
		}), nil
	}}
}

// rbNemeses lists the nemeses available here (partitions need root and iptables, the slow
// disk root, loop devices and cgroup v1's blkio throttle).
func rbNemeses() []rbNemesis {
	all := []rbNemesis{rbPause(), rbPartition(nemesis.Both), rbPartition(nemesis.Inbound),
		rbPartition(nemesis.Outbound), rbPartitionLeader(), rbKill(), rbKillAll(), rbBridge(), rbSlowDisk()}
	partitions, disks := nemesis.Available() == nil, slowdisk.Available() == nil
	return slices.DeleteFunc(all, func(n rbNemesis) bool { return n.partition && !partitions || n.disk && !disks })
}

// TestRobustness is the short deterministic form (part of make test): one run of every nemesis
// kind with a fixed seed and an outage of 1.25 session timeouts. Partition nemeses are skipped
// without root.
func TestRobustness(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process robustness suite: ~3 min (skipped with -short)")
	}
	target := rbTargetFromEnv(t)
	if err := nemesis.Available(); err != nil {
		t.Logf("partition nemeses skipped: %v", err)
	}
	begin := time.Now()
	var sum rbSummary
	nemeses := rbNemeses()
	for i, n := range nemeses {
		t.Run(n.name, func(t *testing.T) {
			res := runRobust(t, target, n, rbOpNone, uint64(i+1), rbShortOutage)
			sum.add(res)
			target.report(t, res.violations)
		})
	}
	// Operations during a fault (Corral only): a subtree move during a partition of one
	// server, an online shard add and move onto it while a server is killed and restarted, an
	// observer added while one server hears nothing from its peers (pauses without root).
	if target.name == rbCorral.name {
		during := []struct {
			n  rbNemesis
			op rbOp
		}{{rbPause(), rbOpMove}, {rbKill(), rbOpAddShardMove}, {rbPause(), rbOpAddObserver}}
		if nemesis.Available() == nil {
			during[0].n = rbPartition(nemesis.Both)
			during[2].n = rbPartition(nemesis.Inbound)
		}
		for i, d := range during {
			t.Run(d.n.name+"-during-"+d.op.name, func(t *testing.T) {
				res := runRobust(t, target, d.n, d.op, uint64(len(nemeses)+i+1), rbShortOutage)
				sum.add(res)
				target.report(t, res.violations)
			})
		}
	}
	sum.log(t)
	t.Logf("total %v", time.Since(begin).Round(time.Second))
}

// TestRobustnessSoak runs CORRAL_ROBUST_SOAK randomized runs (make robust-soak): a random
// nemesis, victim and outage (one to three session timeouts) each. CORRAL_ROBUST_SEED repeats a
// sequence; CORRAL_ROBUST_TARGET=zookeeper runs against Apache ZooKeeper 3.8, where violations
// are logged and counted, not failed. CORRAL_ROBUST_NEMESES=bridge,kill (names, comma-separated)
// draws only from those nemeses.
func TestRobustnessSoak(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("CORRAL_ROBUST_SOAK"))
	if runs <= 0 {
		t.Skip("set CORRAL_ROBUST_SOAK=N to run N randomized robustness runs")
	}
	target := rbTargetFromEnv(t)
	seed, err := strconv.ParseUint(os.Getenv("CORRAL_ROBUST_SEED"), 10, 64)
	if err != nil {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("target %s, seed %d (CORRAL_ROBUST_SEED repeats it)", target.name, seed)
	rnd := rand.New(rand.NewPCG(seed, 0))
	nemeses := rbNemeses()
	if only := os.Getenv("CORRAL_ROBUST_NEMESES"); only != "" {
		names := strings.Split(only, ",")
		nemeses = slices.DeleteFunc(nemeses, func(n rbNemesis) bool { return !slices.Contains(names, n.name) })
		if len(nemeses) == 0 {
			t.Fatalf("CORRAL_ROBUST_NEMESES=%q names no nemesis available here", only)
		}
	}
	var sum rbSummary
	for i := 0; i < runs; i++ {
		n := nemeses[rnd.IntN(len(nemeses))]
		outage := (rbSessionTimeout + time.Duration(rnd.Int64N(int64(2*rbSessionTimeout)))).Round(100 * time.Millisecond)
		runSeed := rnd.Uint64()
		op := rbOps[rnd.IntN(len(rbOps))]
		if target.name != rbCorral.name {
			op = rbOpNone
		}
		name := fmt.Sprintf("%02d-%s-%.1fs", i, n.name, outage.Seconds())
		if op.run != nil {
			name += "-during-" + op.name
		}
		t.Run(name, func(t *testing.T) {
			res := runRobust(t, target, n, op, runSeed, outage)
			sum.add(res)
			target.report(t, res.violations)
		})
	}
	sum.log(t)
}

// rbResult is what one run found.
type rbResult struct {
	nemesis, op, victim string
	outage              time.Duration
	ops                 map[string]int // checker → operations
	violations          []string
	unavail             time.Duration // longest interval without a successful operation of one client
	unavailWho          string
	// unavailFailover is the same over the clients that may move to another server (the
	// pinned lock and ephemeral clients wait for their own server).
	unavailFailover    time.Duration
	unavailFailoverWho string
}

// rbSummary aggregates runs for the final log line.
type rbSummary struct {
	mu   sync.Mutex
	runs []rbResult
}

func (s *rbSummary) add(r rbResult) {
	s.mu.Lock()
	s.runs = append(s.runs, r)
	s.mu.Unlock()
}

func (s *rbSummary) log(t *testing.T) {
	type agg struct {
		runs, ops, bad, violations int
		maxUnavail, maxFailover    time.Duration
	}
	by := map[string]*agg{}
	total := &agg{}
	for _, r := range s.runs {
		key := r.nemesis
		if r.op != rbOpNone.name {
			key += " during " + r.op
		}
		a := by[key]
		if a == nil {
			a = &agg{}
			by[key] = a
		}
		for _, x := range []*agg{a, total} {
			x.runs++
			for _, n := range r.ops {
				x.ops += n
			}
			if len(r.violations) > 0 {
				x.bad++
			}
			x.violations += len(r.violations)
			x.maxUnavail = max(x.maxUnavail, r.unavail)
			x.maxFailover = max(x.maxFailover, r.unavailFailover)
		}
	}
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := by[n]
		t.Logf("SUMMARY %-34s runs %d, operations %d, runs with violations %d (%d violations), longest unavailability %v (clients that fail over: %v)",
			n, a.runs, a.ops, a.bad, a.violations, a.maxUnavail.Round(10*time.Millisecond), a.maxFailover.Round(10*time.Millisecond))
	}
	t.Logf("SUMMARY total: runs %d, operations %d, runs with violations %d (%d violations), longest unavailability %v (clients that fail over: %v)",
		total.runs, total.ops, total.bad, total.violations, total.maxUnavail.Round(10*time.Millisecond), total.maxFailover.Round(10*time.Millisecond))
}

// rbRun is one run's state, shared by the nemesis, the workers and the checkers.
type rbRun struct {
	t      *testing.T
	ctx    context.Context
	target rbTarget
	e      rbEnsemble
	rng    *rand.Rand
	opRng  *rand.Rand // the operation's timing and servers (robust_ops_test.go)
	rec    *linearize.Recorder
	seed   uint64

	voters   int              // the servers the run started with (an observer may join later)
	disks    []*slowdisk.Disk // slow-disk runs: server i's disk
	subtrees []string         // register subtrees, both data shards
	regKeys  []string
	nextID   int

	workers []*rbWorker
	wg      sync.WaitGroup

	mu         sync.Mutex
	violations []string
}

// violation records a violation of a checked property (goroutine-safe).
func (r *rbRun) violation(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

// rbWorker is one workload goroutine with its own session: it counts successful operations and
// measures the longest interval without one.
type rbWorker struct {
	name   string
	pinned bool     // connects to its home server only
	conn   *zk.Conn // nil for a pipe worker, which opens its own sessions
	cancel context.CancelFunc
	done   chan struct{}

	okOps  atomic.Int64
	lastOK atomic.Int64 // recorder clock of the last successful operation
	mu     sync.Mutex
	gaps   []int64 // successful operations' times (recorder clock), in order
}

func (w *rbWorker) ok(now int64) {
	w.okOps.Add(1)
	w.lastOK.Store(now)
	w.mu.Lock()
	w.gaps = append(w.gaps, now)
	w.mu.Unlock()
}

func (w *rbWorker) longestGap(from, to int64) (gap, end int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maxGap(w.gaps, from, to)
}

// dial opens a session that starts on server home and fails over to the others in index order
// (orderedHosts), or, if pinned, only ever connects to home; cb receives its events.
func (r *rbRun) dial(home int, pinned bool, cb func(zk.Event)) *zk.Conn {
	r.t.Helper()
	order := []string{r.e.Addr(home)}
	for i := 0; i < r.e.Size() && !pinned; i++ {
		if i != home {
			order = append(order, r.e.Addr(i))
		}
	}
	if cb == nil {
		cb = func(zk.Event) {}
	}
	c, _, err := zk.Connect(order, rbSessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quiet{}),
		zk.WithHostProvider(newOrderedHosts(order)), zk.WithEventCallback(cb))
	if err != nil {
		r.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for c.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			c.Close()
			r.t.Fatalf("no session with server %d (state %v)", home+1, c.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c
}

// recClient returns a recorded client (tests/fault's client) on its own session.
func (r *rbRun) recClient(home int, pinned bool) *client {
	c := &client{id: r.nextID, server: home, conn: r.dial(home, pinned, nil), rec: r.rec,
		rng: rand.New(rand.NewPCG(r.seed, uint64(r.nextID))), version: map[string]int32{}, counts: map[string]int{}}
	r.nextID++
	return c
}

// spawn runs fn in a worker goroutine until its context is cancelled (stopWorker, or the end
// of the run). The run waits for every worker before it returns.
func (r *rbRun) spawn(w *rbWorker, fn func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(r.ctx)
	w.cancel, w.done = cancel, make(chan struct{})
	r.workers = append(r.workers, w)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(w.done)
		fn(ctx)
	}()
}

func stopWorker(w *rbWorker) {
	w.cancel()
	<-w.done
}

// sleepCtx sleeps for d or until ctx ends; it reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// rbNames returns n top-level names per data shard, "<prefix><k>", chosen with
// router.TopLevelShard (Corral's hash placement), alternating between the shards.
func rbNames(prefix string, n int) []string {
	per := map[uint64][]string{}
	for k := 0; len(per[rbDataShards[0]]) < n || len(per[rbDataShards[1]]) < n; k++ {
		name := prefix + strconv.Itoa(k)
		if s := router.TopLevelShard(name, rbDataShards); len(per[s]) < n {
			per[s] = append(per[s], name)
		}
	}
	var out []string
	for i := 0; i < n; i++ {
		for _, s := range rbDataShards {
			out = append(out, per[s][i])
		}
	}
	return out
}

// runRobust is one run: start, load, fault, heal, load, check. It returns what it found; the
// caller reports the violations (fails, or logs for ZooKeeper). Setup failures fail the test.
func runRobust(t *testing.T, target rbTarget, n rbNemesis, op rbOp, seed uint64, outage time.Duration) rbResult {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var uids map[int]int
	if n.partition {
		uids = rbUIDs
	}
	r := &rbRun{t: t, ctx: ctx, target: target, rng: rand.New(rand.NewPCG(seed, 1)), opRng: rand.New(rand.NewPCG(seed, 2)),
		rec: linearize.NewRecorder(), seed: seed, voters: 3}
	var serverCfg map[int]map[string]string
	var err error
	if n.disk {
		if serverCfg, err = r.makeDisks(r.voters); err != nil {
			t.Fatalf("slow-disk nemesis: %v", err)
		}
	}
	e, err := target.start(ctx, uids, serverCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r.e = e
	if n.disk {
		if err := r.joinDisks(); err != nil {
			t.Fatalf("slow-disk nemesis: %v", err)
		}
	}
	var addrs []string
	for i := 0; i < e.Size(); i++ {
		addrs = append(addrs, fmt.Sprintf("server %d %s", i+1, e.Addr(i)))
	}
	res := rbResult{nemesis: n.name, op: op.name, outage: outage, ops: map[string]int{}}
	t.Logf("%s: seed %d, nemesis %s, operation %s, outage %v; ensemble up in %v (%s)", target.name, seed, n.name, op.name, outage,
		time.Since(begin).Round(time.Millisecond), strings.Join(addrs, ", "))
	defer r.keepLogs()

	w := r.setup()
	defer func() {
		for _, wk := range r.workers {
			wk.cancel()
		}
		r.wg.Wait()
		for _, wk := range r.workers {
			if wk.conn != nil { // a pipe worker's sessions are its own (robust_pipe_test.go)
				wk.conn.Close()
			}
		}
	}()
	loadStart := r.rec.Now()
	for _, wk := range r.workers {
		wk.lastOK.Store(loadStart)
	}
	time.Sleep(rbWarmup)

	// The fault.
	injectAt := r.rec.Now()
	victim, heal, err := n.inject(r)
	if err != nil {
		t.Fatalf("inject %s: %v", n.name, err)
	}
	defer heal()
	res.victim = victim
	opCtx, opCancel := context.WithCancel(ctx)
	defer opCancel()
	opOutcome := r.startOp(opCtx, op, outage/2)
	time.Sleep(outage)
	healAt := r.rec.Now()
	if err := heal(); err != nil {
		t.Fatalf("heal %s: %v", n.name, err)
	}
	t.Logf("%s of %s at %v into the load, healed at %v (heal took %v); recorder clock: load from %v, fault %v to %v",
		n.name, victim, ms(injectAt-loadStart), ms(healAt-loadStart), ms(r.rec.Now()-healAt), ms(loadStart), ms(injectAt), ms(healAt))

	// After the heal: every worker must succeed again (liveness), and the load goes on for
	// rbAfterHeal at least.
	progressDeadline := time.Now().Add(rbProgressBound)
	for {
		var lagging []string
		for _, wk := range r.workers {
			if wk.lastOK.Load() < healAt {
				lagging = append(lagging, wk.name)
			}
		}
		if len(lagging) == 0 && r.rec.Now()-healAt >= int64(rbAfterHeal) {
			break
		}
		if time.Now().After(progressDeadline) {
			r.violation("no successful operation within %v after the heal: %v", rbProgressBound, lagging)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	recovered := r.rec.Now()
	t.Logf("every client succeeded again %v after the heal", ms(recovered-healAt))
	stopOp := time.AfterFunc(time.Until(progressDeadline), opCancel)
	r.checkOp(op, opOutcome) // under load
	stopOp.Stop()

	// Stop the load, the watcher last (it must see the final version first), then check.
	for _, wk := range r.workers {
		if wk != w.watcher.w {
			stopWorker(wk)
		}
	}
	loadEnd := r.rec.Now()
	r.check(w, &res)
	for _, wk := range r.workers {
		gap, end := wk.longestGap(loadStart, loadEnd)
		who := fmt.Sprintf("%s, ending %v after the fault began", wk.name, ms(end-injectAt))
		if d := time.Duration(gap); d > res.unavail {
			res.unavail, res.unavailWho = d, who
		}
		if d := time.Duration(gap); !wk.pinned && d > res.unavailFailover {
			res.unavailFailover, res.unavailFailoverWho = d, who
		}
	}
	res.violations = r.violations
	var ops []string
	for _, k := range slices.Sorted(maps.Keys(res.ops)) {
		ops = append(ops, fmt.Sprintf("%s %d", k, res.ops[k]))
	}
	t.Logf("RESULT %s nemesis=%s operation=%s victim=%q outage=%v ops: %s; violations %d; longest unavailability %v (%s); of clients that fail over %v (%s); run took %v",
		target.name, n.name, op.name, victim, outage, strings.Join(ops, ", "), len(res.violations), ms(int64(res.unavail)), res.unavailWho,
		ms(int64(res.unavailFailover)), res.unavailFailoverWho, time.Since(begin).Round(time.Millisecond))
	return res
}

// keepLogs copies the servers' logs of a run that failed or found violations (of every run
// with CORRAL_ROBUST_KEEP_LOGS=1) to a directory that outlives the ensemble, and names it.
func (r *rbRun) keepLogs() {
	r.mu.Lock()
	bad := len(r.violations) > 0
	r.mu.Unlock()
	if !bad && !r.t.Failed() && os.Getenv("CORRAL_ROBUST_KEEP_LOGS") != "1" {
		return
	}
	dir, err := os.MkdirTemp(os.Getenv(linearize.VisualizationDirEnv), "corral-robust-logs-*")
	if err != nil {
		r.t.Logf("server logs not kept: %v", err)
		return
	}
	for i := 0; i < r.e.Size(); i++ {
		logs, _ := filepath.Glob(filepath.Join(r.e.ServerDir(i), "*.log"))
		for _, l := range logs {
			data, err := os.ReadFile(l)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%d-%s", i+1, filepath.Base(l))), data, 0o644)
			}
			if err != nil {
				r.t.Logf("server log %s not kept: %v", l, err)
			}
		}
	}
	r.t.Logf("server logs kept in %s", dir)
}
