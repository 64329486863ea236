package faulttest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/internal/linearize"
	"github.com/corral/corral/router"
)

// The shape of the process-level load of TestRollingRestart and the TestFaultDuring* tests.
const (
	rollTickTime = 500 * time.Millisecond // zoo.cfg tickTime: sessions of up to 20 ticks (sessionTimeout, 10 s)
	// rollElection is the longest Raft election timeout: dragonboat's ElectionRTT (20, in
	// cluster/server.go) times corral.rtt (10 ms), randomized up to twice that.
	rollElection = 2 * 20 * 10 * time.Millisecond
	// rollGapBound is the liveness bound on a client's wait for a definite outcome while a
	// server restarts. A restart costs a client at most one election when the stopped server
	// led a shard it uses (rollElection), or, after SIGTERM's leadership hand-over, one new
	// attempt of a proposal the transferring leader dropped without an answer (the cluster
	// package's dataAttempt, 2 s); go-zookeeper reconnects to another server at once when the
	// process exits. 3 s covers either, with room for what a 2-core machine shared by three
	// servers replaying and catching up adds. Measured waits are logged (0.27-0.85 s in 13
	// runs, docs/reliability.md); a wait past the bound fails the test with the servers' logs
	// saved.
	rollGapBound = 3 * time.Second
	// rollStuckBound is the wait that means an ensemble stopped serving, for the tests whose
	// faults allow no tighter bound (a slow disk): two session timeouts without an answer.
	rollStuckBound = 2 * sessionTimeout
	rollOpPause    = 2 * time.Millisecond
	rollHolderPoll = 100 * time.Millisecond
	rollDwell      = time.Second // load between two restarts, once the ensemble is settled
)

// rollKeepEnv names an environment variable that, set, keeps the ensemble directories (zoo.cfg,
// data, server.log) of the tests in this file and of opsfault_test.go for a look afterwards.
const rollKeepEnv = "CORRAL_FAULT_KEEP_DIR"

// rollClient is a recorded session of the load: a register client over keys, or a holder (keys
// empty) that keeps its session with an ephemeral node and reads now and then.
type rollClient struct {
	*client
	keys    []string
	session int64  // the session at the start
	eph     string // the holder's ephemeral node
	what    string // how it connects, for the log
	expired atomic.Bool
	// holders measure their own waits (they do not record their reads).
	holderGap, holderLast int64
}

// rollLoad is a recorded load on a corralproc ensemble; start it with startRollLoad, stop it
// with stop (idempotent, also deferred), and check it with check.
type rollLoad struct {
	t       *testing.T
	e       *corralproc.Ensemble
	rec     *linearize.Recorder
	seed    uint64
	nextID  int
	keys    []string
	clients []*rollClient
	holders []*rollClient

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	errs    chan error
	began   int64
	stopped int64
	once    sync.Once
}

// rollHosts is the connect string of a session: home first, then the other servers in index
// order; home < 0 is every server in go-zookeeper's shuffled order.
func rollHosts(e *corralproc.Ensemble, home int, servers []int) []string {
	var order []string
	if home >= 0 {
		order = append(order, e.Addr(home))
	}
	for _, i := range servers {
		if i != home {
			order = append(order, e.Addr(i))
		}
	}
	return order
}

// newRollClient opens a recorded session. home >= 0 pins it to that server first (it moves to
// the others only when that fails); -1 connects it to all servers of servers.
func (l *rollLoad) newRollClient(home int, servers []int, keys []string) *rollClient {
	t := l.t
	t.Helper()
	rc := &rollClient{keys: keys}
	order := rollHosts(l.e, home, servers)
	var hosts zk.HostProvider = &zk.DNSHostProvider{} // go-zookeeper's default: shuffled
	rc.what = "all servers"
	if home >= 0 {
		hosts = newOrderedHosts(order)
		rc.what = "server " + strconv.Itoa(home+1) + " first"
	}
	conn, _, err := zk.Connect(order, sessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quiet{}), zk.WithHostProvider(hosts),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.State == zk.StateExpired {
				rc.expired.Store(true)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			conn.Close()
			t.Fatalf("no session (%s, state %v)", rc.what, conn.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
	rc.client = &client{id: l.nextID, server: home, conn: conn, rec: l.rec,
		rng: rand.New(rand.NewPCG(l.seed, uint64(l.nextID))), version: map[string]int32{}, counts: map[string]int{}}
	rc.session = conn.SessionID()
	l.nextID++
	return rc
}

// rollSubtrees returns n top-level names ("rl" plus a number, prefix varying) for each data
// shard in shards, chosen with router.TopLevelShard over all of them.
func rollSubtrees(t *testing.T, prefix string, shards []uint64, n int) map[uint64][]string {
	t.Helper()
	out := map[uint64][]string{}
	for k, found := 0, 0; found < n*len(shards); k++ {
		if k > 10000 {
			t.Fatalf("no %d names per shard: %v", n, out)
		}
		name := prefix + strconv.Itoa(k)
		if s := router.TopLevelShard(name, shards); len(out[s]) < n {
			out[s] = append(out[s], name)
			found++
		}
	}
	return out
}

func dataShards(n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = cluster.DataShardID(i)
	}
	return ids
}

// startRollLoad creates the parents and register keys (recorded, so that the model knows their
// first values) and starts the load: per server one register client pinned to it and one
// connected to all servers, and per server a holder pinned to it with an ephemeral node under
// holderDir ("" = no holders). parents are created unless they exist; keys are created.
// startShardLoad starts the recorded load on two register keys below one top-level subtree
// (named prefix + a number) on each of the ensemble's first shards data shards, with holders
// under /holders, and returns it with the subtrees' names by shard.
func startShardLoad(t *testing.T, e *corralproc.Ensemble, prefix string, shards int) (*rollLoad, map[uint64][]string) {
	t.Helper()
	names := rollSubtrees(t, prefix, dataShards(shards), 1)
	var parents, keys []string
	for _, id := range dataShards(shards) {
		p := "/" + names[id][0]
		parents = append(parents, p)
		keys = append(keys, p+"/k0", p+"/k1")
	}
	parents = append(parents, "/holders")
	return startRollLoad(t, e, parents, keys, "/holders"), names
}

func startRollLoad(t *testing.T, e *corralproc.Ensemble, parents, keys []string, holderDir string) *rollLoad {
	t.Helper()
	l := &rollLoad{t: t, e: e, rec: linearize.NewRecorder(), seed: uint64(time.Now().UnixNano()), keys: keys}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	all := []int{0, 1, 2}
	setup := l.newRollClient(0, all, nil)
	defer setup.conn.Close()
	for _, p := range parents {
		if _, err := setup.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	for _, p := range keys {
		out, err := setup.do(linearize.Input{Kind: linearize.Create, Path: p, Data: "init" + p})
		if err != nil || out.Result != linearize.OK {
			t.Fatalf("create %s: %v %v", p, out.Result, err)
		}
	}
	for i := range all {
		l.clients = append(l.clients, l.newRollClient(i, all, keys), l.newRollClient(-1, all, keys))
		if holderDir != "" {
			h := l.newRollClient(i, all, nil)
			h.eph = fmt.Sprintf("%s/eph-%d", holderDir, i)
			if _, err := h.conn.Create(h.eph, []byte(h.eph), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create ephemeral %s: %v", h.eph, err)
			}
			l.holders = append(l.holders, h)
		}
	}
	l.errs = make(chan error, len(l.clients))
	l.began = l.rec.Now()
	for _, c := range l.clients {
		c.lastDefinite = l.began
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; n < maxOpsPerClient && l.ctx.Err() == nil; n++ {
				if _, err := c.do(c.rollNext()); err != nil {
					l.errs <- err
					return
				}
				time.Sleep(rollOpPause)
			}
		}()
	}
	for _, h := range l.holders {
		h.holderLast = l.began
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tick := time.NewTicker(rollHolderPoll)
			defer tick.Stop()
			for {
				select {
				case <-l.ctx.Done():
					return
				case <-tick.C:
				}
				if ok, _, err := h.conn.Exists(h.eph); err == nil && ok {
					now := l.rec.Now()
					h.holderGap = max(h.holderGap, now-h.holderLast)
					h.holderLast = now
				}
			}
		}()
	}
	t.Logf("load: seed %d; %d register clients over %d keys, %d holders", l.seed, len(l.clients), len(keys), len(l.holders))
	return l
}

// rollNext picks a register client's next operation over its keys (all below a top-level
// subtree, so every operation is on one shard).
func (c *rollClient) rollNext() linearize.Input {
	path := c.keys[c.rng.IntN(len(c.keys))]
	c.seq++
	data := fmt.Sprintf("c%d-%d", c.id, c.seq)
	switch r := c.rng.IntN(100); {
	case r < 25:
		return linearize.Input{Kind: linearize.Get, Path: path, Synced: true}
	case r < 40:
		return linearize.Input{Kind: linearize.Get, Path: path}
	case r < 78:
		v := linearize.AnyVersion
		if c.rng.IntN(3) == 0 {
			v = c.expected(path)
		}
		return linearize.Input{Kind: linearize.Set, Path: path, Data: data, Version: v}
	case r < 91:
		return linearize.Input{Kind: linearize.Create, Path: path, Data: data}
	default:
		return linearize.Input{Kind: linearize.Delete, Path: path, Version: c.expected(path)}
	}
}

// stop ends the load and waits for its goroutines; the sessions stay open (check closes them).
func (l *rollLoad) stop() {
	l.once.Do(func() {
		l.stopped = l.rec.Now()
		l.cancel()
		l.wg.Wait()
		close(l.errs)
	})
}

// close closes every session of the load.
func (l *rollLoad) close() {
	l.stop()
	for _, c := range slices.Concat(l.clients, l.holders) {
		c.conn.Close()
	}
}

// rollResult is what check measured.
type rollResult struct {
	maxGap     time.Duration // longest wait of any client for a definite outcome
	maxGapWho  string
	ops, acked int
}

// rollLeaseLapse returns the servers' log lines that show the known cause of a stall in a
// rolling restart: session activity reports to the meta shard failing after its leadership
// moved, until a server closes connections whose session lease it could not renew (two thirds
// of the session timeout). Empty when no server closed a connection for that reason.
func rollLeaseLapse(e *corralproc.Ensemble) string {
	var lines []string
	closed := false
	for i := 0; i < e.Size(); i++ {
		data, _ := os.ReadFile(e.LogPath(i))
		reports, closes := 0, 0
		for _, line := range strings.Split(string(data), "\n") {
			switch {
			case strings.Contains(line, "its session lease cannot be renewed"):
				closed = true
				if closes++; closes <= 2 {
					lines = append(lines, line)
				}
			case strings.Contains(line, "session activity report failed"):
				if reports++; reports <= 2 {
					if j := strings.Index(line, `\n`); j > 0 {
						line = line[:j] // the error's stack trace
					}
					lines = append(lines, line)
				}
			}
		}
	}
	if !closed {
		return ""
	}
	return strings.Join(lines, "\n")
}

// check stops the load and checks it: no unexpected client error; every key read back (sync
// then get) through each server in servers; porcupine and the validators (no acknowledged
// write lost, no session read going back); no session of the load expired or changed and every
// holder's ephemeral is there with its owner, read through each server; and, if gapBound > 0,
// that no client waited longer than gapBound for a definite outcome.
func (l *rollLoad) check(servers []int, gapBound time.Duration) rollResult {
	t := l.t
	t.Helper()
	defer func() {
		if t.Failed() {
			rollSaveLogs(t, l.e)
		}
	}()
	l.stop()
	for err := range l.errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	var res rollResult
	for _, c := range l.clients {
		gap := time.Duration(c.maxGap)
		t.Logf("client %d (%s): longest wait for a definite outcome %v, ending %.1fs into the load; %d definite; slowest %v",
			c.id, c.what, gap.Round(time.Millisecond), time.Duration(c.maxGapEnd-l.began).Seconds(), c.definite.Load(), c.slowest)
		if gap > res.maxGap {
			res.maxGap, res.maxGapWho = gap, fmt.Sprintf("client %d (%s)", c.id, c.what)
		}
		if c.definite.Load() < 20 {
			t.Errorf("client %d (%s) completed only %d operations", c.id, c.what, c.definite.Load())
		}
	}
	for _, h := range l.holders {
		gap := time.Duration(max(h.holderGap, l.stopped-h.holderLast))
		t.Logf("holder %d (%s, %s): longest wait between successful reads %v", h.id, h.what, h.eph, gap.Round(time.Millisecond))
		if gap > res.maxGap {
			res.maxGap, res.maxGapWho = gap, fmt.Sprintf("holder %d (%s)", h.id, h.what)
		}
	}
	if gapBound > 0 && res.maxGap > gapBound {
		why := "no server closed a connection for its session lease; see the saved logs (leaderships moving)"
		if lapse := rollLeaseLapse(l.e); lapse != "" {
			why = "servers closed connections whose session lease lapsed; the logs say:\n" + lapse
		}
		t.Errorf("%s waited %v for a definite outcome (bound %v, one election is at most %v): %s",
			res.maxGapWho, res.maxGap.Round(time.Millisecond), gapBound, rollElection, why)
		rollSaveLogs(t, l.e)
	}
	for _, c := range slices.Concat(l.clients, l.holders) {
		if c.expired.Load() {
			t.Errorf("client %d (%s): its session expired, though it stayed connected", c.id, c.what)
		}
		if st, id := c.conn.State(), c.conn.SessionID(); id != c.session {
			t.Errorf("client %d (%s): session %x at the end (state %v), want %x", c.id, c.what, id, st, c.session)
		}
	}
	for _, i := range servers {
		shFinalReads(t, l.rec, l.nextID+i, l.e.Addr(i), l.keys)
		c := dial(t, l.e.Addr(i))
		for _, h := range l.holders {
			if _, err := c.Sync(h.eph); err != nil {
				t.Fatalf("server %d: sync %s: %v", i+1, h.eph, err)
			}
			_, st, err := c.Get(h.eph)
			if err != nil || st.EphemeralOwner != h.session {
				var owner int64
				if st != nil {
					owner = st.EphemeralOwner
				}
				t.Errorf("server %d: ephemeral %s of a connected session: owner %x, %v; want owner %x", i+1, h.eph, owner, err, h.session)
			}
		}
		c.Close()
	}
	h := l.rec.History()
	for _, op := range h {
		res.ops++
		if op.Acknowledged() {
			res.acked++
		}
	}
	t.Logf("history: %d operations, %d acknowledged writes, %v of load", res.ops, res.acked, ms(l.stopped-l.began))
	ok, info := linearize.Check(h, 2*checkTimeout)
	t.Logf("porcupine: %s", info)
	if !ok {
		t.Errorf("%v", info.Err())
		reportIllegalPaths(t, h, l.keys)
	}
	if err := linearize.Validate(h); err != nil {
		t.Errorf("validators: %v", err)
	}
	if res.acked < 100 {
		t.Errorf("only %d writes acknowledged", res.acked)
	}
	t.Logf("longest wait for a definite outcome: %v (%s); liveness bound %v", res.maxGap.Round(time.Millisecond), res.maxGapWho, gapBound)
	return res
}

// rollSaveLogs copies every server's log to a new directory that outlives the ensemble's, and
// says where: for a failed check, whose ensemble directory Close removes.
func rollSaveLogs(t *testing.T, e *corralproc.Ensemble) {
	dir, err := os.MkdirTemp("", "corral-fault-logs-")
	if err != nil {
		t.Logf("server logs not saved: %v", err)
		return
	}
	for i := 0; i < e.Size(); i++ {
		if data, err := os.ReadFile(e.LogPath(i)); err == nil {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("server%d.log", i+1)), data, 0o644)
		}
	}
	t.Logf("server logs saved in %s", dir)
}

// TestRollingRestart restarts the servers of a 3-process ensemble (three data shards) one at a
// time under a recorded load, as an operator rolls a restart: stop a server, start it, wait
// until every server serves and every Raft group has a running leader, let the load run a
// second, go on with the next. SIGTERM goes twice around the ensemble; SIGKILL (a crash
// instead of a clean stop) once. Checked: no acknowledged write is lost and the register
// history is linearizable (porcupine, validators), no session of the load expired or changed
// (every client stayed connected to some server; the holders' ephemerals are there, read
// through every server), and no client waited longer than rollGapBound for a definite outcome
// (measured per client and logged; a longer wait fails the test with the servers' logs saved).
func TestRollingRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process rolling restart: ~60 s (skipped with -short)")
	}
	t.Run("SIGTERM", func(t *testing.T) { testRollingRestart(t, false, 2) })
	t.Run("SIGKILL", func(t *testing.T) { testRollingRestart(t, true, 1) })
}

func testRollingRestart(t *testing.T, kill bool, rounds int) {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const shards = 3
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: shards, TickTime: rollTickTime,
		KeepDir: os.Getenv(rollKeepEnv) != ""})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	t.Logf("ensemble up in %v (%s)", time.Since(begin).Round(time.Millisecond), e.Dir())
	subtrees := rollSubtrees(t, "rl", dataShards(shards), 1)
	var parents, keys []string
	for _, s := range dataShards(shards) {
		for _, name := range subtrees[s] {
			parents = append(parents, "/"+name)
			for k := 0; k < 2; k++ {
				keys = append(keys, fmt.Sprintf("/%s/k%d", name, k))
			}
		}
	}
	parents = append(parents, "/holders")
	l := startRollLoad(t, e, parents, keys, "/holders")
	defer l.close()
	time.Sleep(rollDwell)

	how := "SIGTERM"
	if kill {
		how = "SIGKILL"
	}
	var restarts []time.Duration
	for round := 0; round < rounds; round++ {
		for i := 0; i < e.Size(); i++ {
			at, atLoad := time.Now(), l.rec.Now()
			if kill {
				err = e.Kill(i)
			} else {
				err = e.Stop(i)
			}
			if err != nil {
				t.Fatal(err)
			}
			stopped := time.Since(at)
			if err := e.Start(ctx, i); err != nil {
				t.Fatalf("restart server %d: %v", i+1, err)
			}
			serving := time.Since(at)
			if err := e.WaitLeaders(ctx); err != nil {
				t.Fatalf("after restarting server %d: %v", i+1, err)
			}
			restarts = append(restarts, time.Since(at))
			t.Logf("round %d: %s server %d at %.1fs: stopped in %v, serving after %v, leaders settled after %v",
				round+1, how, i+1, time.Duration(atLoad-l.began).Seconds(), stopped.Round(time.Millisecond),
				serving.Round(time.Millisecond), time.Since(at).Round(time.Millisecond))
			time.Sleep(rollDwell)
		}
	}
	res := l.check([]int{0, 1, 2}, rollGapBound)
	t.Logf("%s rolling restart, %d rounds: restarts took %v; longest client wait %v (%s); %d acknowledged writes; total %v",
		how, rounds, restarts, res.maxGap.Round(time.Millisecond), res.maxGapWho, res.acked, time.Since(begin).Round(time.Millisecond))
}
