package faulttest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/linearize"
	"github.com/corral/corral/internal/testcluster"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// dragonboat keeps a few process-wide goroutines (logger, pools) alive after NodeHost.Close.
		goleak.IgnoreTopFunction("github.com/lni/goutils/syncutil.(*Stopper).runWorker.func1"),
		goleak.IgnoreAnyFunction("github.com/cockroachdb/pebble.(*tableCacheShard).releaseLoop"),
		goleak.IgnoreAnyFunction("github.com/lni/dragonboat/v4/internal/transport.(*Transport).connectAndProcess"),
		goleak.IgnoreAnyFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreAnyFunction("time.Sleep"),
	)
}

// The load's shape.
const (
	clientsPerServer = 2
	numKeys          = 8
	loadDuration     = 8 * time.Second
	stopAfter        = 2500 * time.Millisecond // into the load: stop the data shard's leader
	downFor          = 2500 * time.Millisecond // then restart it
	maxOpsPerClient  = 20000                   // a bound that the load does not normally reach
	sessionTimeout   = 10 * time.Second        // the ensemble's maximum (20 ticks of 500 ms): outlives the outage
	// progressAfterRestart operations with a definite outcome, per client, after the restart.
	progressAfterRestart = 3
	// Liveness bounds, not timing assertions: each is several times what a healthy run needs.
	progressBound = 20 * time.Second
	finalBound    = 20 * time.Second
	checkTimeout  = 20 * time.Second
)

func keyPath(i int) string { return fmt.Sprintf("/lin%d", i) }

// errSyncTimeout is how go-zookeeper v1.0.4 reports ZooKeeper's OPERATIONTIMEOUT (-7), which
// Corral answers to a sync whose ReadIndex did not complete (no leader): it has no sentinel.
const errSyncTimeout = "unknown error: -7"

// classify maps go-zookeeper's answer to an operation of kind to the recorded outcome. A
// request go-zookeeper never sent (ErrNoServer: flushed from its queue while it had no
// connection) certainly had no effect; a lost connection, a session expiry reported while the
// request was outstanding, a socket error and a server-side timeout leave the outcome unknown.
// Anything else is an error the load does not expect, returned as such.
func classify(kind linearize.Kind, err error) (linearize.Result, error) {
	var netErr net.Error
	switch {
	case err == nil:
		return linearize.OK, nil
	case errors.Is(err, zk.ErrNoNode) && kind != linearize.Create:
		return linearize.NoNode, nil
	case errors.Is(err, zk.ErrNodeExists) && kind == linearize.Create:
		return linearize.NodeExists, nil
	case errors.Is(err, zk.ErrBadVersion) && (kind == linearize.Set || kind == linearize.Delete):
		return linearize.BadVersion, nil
	case errors.Is(err, zk.ErrNoServer):
		return linearize.Failed, nil
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrSessionExpired),
		errors.As(err, &netErr), err.Error() == errSyncTimeout:
		return linearize.Unknown, nil
	}
	return 0, fmt.Errorf("unexpected error from go-zookeeper for %v: %w", kind, err)
}

// client is one recorded ZooKeeper client pinned to one server.
type client struct {
	id     int
	server int
	conn   *zk.Conn
	rec    *linearize.Recorder
	rng    *rand.Rand
	seq    int
	// version is the node version the client last saw per key; absent or unknown: -1.
	version map[string]int32
	// definite counts operations with a definite outcome (for the liveness check).
	definite atomic.Int64
	counts   map[string]int // "kind result" → operations, for the log
	// The longest wait for a definite outcome, and when it ended (recorder clock), and the
	// slowest operation, for the log.
	lastDefinite, maxGap, maxGapEnd int64
	slowest                         linearize.Op
}

func dial(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, sessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for c.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			c.Close()
			t.Fatalf("no session with %s (state %v)", addr, c.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// do runs one operation and records it. It returns the outcome, or an error the load does not
// expect.
func (c *client) do(in linearize.Input) (linearize.Output, error) {
	before := c.conn.SessionID()
	p := c.rec.Begin(c.id, in)
	var (
		out linearize.Output
		st  *zk.Stat
		err error
	)
	switch in.Kind {
	case linearize.Get:
		var data []byte
		if in.Synced {
			_, err = c.conn.Sync(in.Path)
		}
		if err == nil {
			data, st, err = c.conn.Get(in.Path)
		}
		out.Data = string(data)
	case linearize.Set:
		st, err = c.conn.Set(in.Path, []byte(in.Data), in.Version)
	case linearize.Create:
		_, err = c.conn.Create(in.Path, []byte(in.Data), 0, zk.WorldACL(zk.PermAll))
	case linearize.Delete:
		err = c.conn.Delete(in.Path, in.Version)
	}
	session := c.conn.SessionID()
	if session != before {
		session = 0 // the session changed while the operation was outstanding
	}
	res, cerr := classify(in.Kind, err)
	if cerr != nil {
		p.Unknown(session)
		return out, fmt.Errorf("client %d (server %d) %v %s: %w", c.id, c.server+1, in.Kind, in.Path, cerr)
	}
	out.Result = res
	if res == linearize.OK && st != nil && (in.Kind == linearize.Get || in.Kind == linearize.Set) {
		out.Version, out.Czxid, out.Mzxid = st.Version, st.Czxid, st.Mzxid
	} else {
		out.Data = ""
	}
	p.End(session, out)
	if took := c.rec.Now() - p.Call(); took > c.slowest.Return-c.slowest.Call {
		c.slowest = linearize.Op{Client: c.id, Session: session, Input: in, Output: out, Call: p.Call(), Return: p.Call() + took}
	}
	what := in.Kind.String() + " " + res.String()
	if res == linearize.Unknown {
		what += " (" + err.Error() + ")"
	}
	c.counts[what]++
	if res != linearize.Unknown && res != linearize.Failed {
		c.definite.Add(1)
		if now := c.rec.Now(); now-c.lastDefinite > c.maxGap {
			c.maxGap, c.maxGapEnd = now-c.lastDefinite, now
		}
		c.lastDefinite = c.rec.Now()
	}
	c.learn(in, out)
	return out, nil
}

// learn keeps the version the client expects for its next conditional write of a key.
func (c *client) learn(in linearize.Input, out linearize.Output) {
	switch {
	case out.Result == linearize.OK && (in.Kind == linearize.Get || in.Kind == linearize.Set):
		c.version[in.Path] = out.Version
	case out.Result == linearize.OK && in.Kind == linearize.Create:
		c.version[in.Path] = 0
	default:
		c.version[in.Path] = -1
	}
}

// expected returns the version for a conditional write: mostly the last seen one, sometimes
// "any", sometimes a guess.
func (c *client) expected(path string) int32 {
	v, ok := c.version[path]
	switch r := c.rng.IntN(10); {
	case ok && v >= 0 && r < 8:
		return v
	case r < 5:
		return linearize.AnyVersion
	default:
		return int32(c.rng.IntN(4))
	}
}

// next picks the next operation: a bounded mix over numKeys keys.
func (c *client) next() linearize.Input {
	path := keyPath(c.rng.IntN(numKeys))
	c.seq++
	data := fmt.Sprintf("c%d-%d", c.id, c.seq) // unique per write: reads name the write they saw
	switch r := c.rng.IntN(100); {
	case r < 30:
		return linearize.Input{Kind: linearize.Get, Path: path, Synced: true}
	case r < 45:
		return linearize.Input{Kind: linearize.Get, Path: path}
	case r < 75:
		return linearize.Input{Kind: linearize.Set, Path: path, Data: data, Version: c.expected(path)}
	case r < 89:
		return linearize.Input{Kind: linearize.Create, Path: path, Data: data}
	default:
		return linearize.Input{Kind: linearize.Delete, Path: path, Version: c.expected(path)}
	}
}

// TestLinearizableUnderLeaderFailover runs six recorded clients (two pinned to each server)
// doing get/sync+get/set-with-version/create/delete over eight keys while the data shard's
// leader is stopped and later restarted, then reads every key from every server and checks the
// whole history: porcupine (writes and synced reads are linearizable), every acknowledged write
// is present afterwards, and no session read goes back in time.
func TestLinearizableUnderLeaderFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test: a 3-server ensemble under load for ~10 s (skipped with -short)")
	}
	start := time.Now()
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 1})
	addrs := cl.Addrs()
	rec := linearize.NewRecorder()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d; ensemble up in %v", seed, time.Since(start).Round(time.Millisecond))

	var clients []*client
	for i := range len(addrs) * clientsPerServer {
		srv := i % len(addrs)
		c := &client{id: i, server: srv, conn: dial(t, addrs[srv]), rec: rec,
			rng: rand.New(rand.NewPCG(seed, uint64(i))), version: map[string]int32{}, counts: map[string]int{}}
		defer c.conn.Close()
		clients = append(clients, c)
	}

	ctx, stopLoad := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { stopLoad(); wg.Wait() }() // before the connections close, also on t.Fatal
	errs := make(chan error, len(clients))
	loadStart := time.Now()
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < maxOpsPerClient && ctx.Err() == nil; n++ {
				if _, err := c.do(c.next()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}

	// The fault: stop the data shard's leader, restart it from its data directory.
	time.Sleep(stopAfter)
	leader := waitLeader(t, cl, -1)
	stopAt := rec.Now()
	cl.Stop(leader)
	t.Logf("stopping server %d (data shard leader) at %v took %v", leader+1, time.Duration(stopAt),
		time.Duration(rec.Now()-stopAt).Round(time.Millisecond))
	time.Sleep(downFor)
	restartAt := rec.Now()
	cl.Restart(leader)
	t.Logf("restarting server %d at %v took %v; leader: server %d", leader+1, time.Duration(restartAt),
		time.Duration(rec.Now()-restartAt).Round(time.Millisecond), waitLeader(t, cl, -1)+1)

	// Keep the load going until its duration is over and every client, including those pinned
	// to the restarted server, has completed operations again.
	atRestart := make([]int64, len(clients))
	for i, c := range clients {
		atRestart[i] = c.definite.Load()
	}
	progressDeadline := time.Now().Add(progressBound)
	for {
		lagging := -1
		for i, c := range clients {
			if c.definite.Load()-atRestart[i] < progressAfterRestart {
				lagging = i
			}
		}
		if lagging < 0 && time.Since(loadStart) >= loadDuration || len(errs) > 0 {
			break
		}
		if time.Now().After(progressDeadline) && lagging >= 0 {
			stopLoad()
			wg.Wait()
			t.Fatalf("client %d (server %d) completed %d operations in %v after the restart, want %d",
				lagging, clients[lagging].server+1, clients[lagging].definite.Load()-atRestart[lagging],
				progressBound, progressAfterRestart)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopLoad()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, c := range clients {
		t.Logf("client %d (server %d): longest wait for a definite outcome %v, ended at %v; slowest operation %v; %v",
			c.id, c.server+1, time.Duration(c.maxGap).Round(time.Millisecond), time.Duration(c.maxGapEnd).Round(time.Millisecond),
			c.slowest, c.counts)
	}

	// Final reads: sync then get every key on every server, on fresh sessions.
	for srv, addr := range addrs {
		finalReads(t, rec, len(clients)+srv, addr)
	}

	h := rec.History()
	t.Logf("history: %d operations in %v of load", len(h), time.Since(loadStart).Round(time.Millisecond))
	ok, info := linearize.Check(h, checkTimeout)
	t.Logf("porcupine: %s", info)
	if !ok {
		t.Errorf("%v", info.Err())
		reportIllegal(t, h)
	}
	if err := linearize.Validate(h); err != nil {
		t.Errorf("validators: %v", err)
	}
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

// waitLeader waits for a running server other than not to lead the data shard.
func waitLeader(t *testing.T, cl *testcluster.Cluster, not int) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if l := cl.Leader(cluster.DataShardID(0)); l >= 0 && l != not {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader of the data shard (other than server %d)", not+1)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// finalReads reads every key with sync+get through a fresh session on addr, retrying reads whose
// outcome is unknown, and records them as client id.
func finalReads(t *testing.T, rec *linearize.Recorder, id int, addr string) {
	t.Helper()
	c := &client{id: id, conn: dial(t, addr), rec: rec, version: map[string]int32{}, counts: map[string]int{}}
	defer c.conn.Close()
	deadline := time.Now().Add(finalBound)
	for k := range numKeys {
		for {
			out, err := c.do(linearize.Input{Kind: linearize.Get, Path: keyPath(k), Synced: true})
			if err != nil {
				t.Fatal(err)
			}
			if out.Result == linearize.OK || out.Result == linearize.NoNode {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("final read of %s on %s: no answer in %v", keyPath(k), addr, finalBound)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// reportIllegal checks each key's history alone and writes those that are not linearizable to a
// text file next to the visualization, printing its path.
func reportIllegal(t *testing.T, h linearize.History) {
	t.Helper()
	for k := range numKeys {
		path := keyPath(k)
		var sub linearize.History
		for _, op := range h {
			if op.Input.Path == path {
				sub = append(sub, op)
			}
		}
		if ok, info := linearize.Check(sub, checkTimeout); !ok {
			var b strings.Builder
			for _, op := range sub {
				fmt.Fprintln(&b, op)
			}
			f, err := os.CreateTemp(os.Getenv(linearize.VisualizationDirEnv), "corral-fault-history-*.txt")
			if err != nil {
				t.Errorf("%s: %s (history not written: %v)", path, info, err)
				continue
			}
			f.WriteString(b.String())
			f.Close()
			t.Errorf("%s is not linearizable: %s; its history: %s", path, info, f.Name())
		}
	}
}
