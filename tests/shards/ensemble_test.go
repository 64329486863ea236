package shardstest

import (
	"bytes"
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/internal/testcluster"
	"github.com/corral/corral/internal/testknobs"
	"github.com/corral/corral/router"
)

func TestMain(m *testing.M) {
	code := m.Run()
	// The corral binary corralproc built for the multi-process subtests goes with this process.
	corralproc.RemoveBinary()
	os.Exit(code)
}

// mode says how a test's ensemble runs.
type mode string

const (
	// inProcess: three cluster.Servers in the test process (internal/testcluster).
	inProcess mode = "inprocess"
	// multiProcess: three `corral server` processes started from their own zoo.cfg
	// (internal/corralproc), as an operator runs them.
	multiProcess mode = "multiprocess"
)

// bothModes runs a guarantee test as two subtests, "inprocess" and "multiprocess", each with an
// ensemble of its own (the body starts it with startEnsemble). The multi-process subtest is
// skipped under -short.
func bothModes(t *testing.T, body func(t *testing.T, m mode)) {
	t.Run(string(inProcess), func(t *testing.T) { body(t, inProcess) })
	t.Run(string(multiProcess), func(t *testing.T) {
		if testing.Short() {
			t.Skip("-short: no multi-process ensemble")
		}
		body(t, multiProcess)
	})
}

// lag makes one server's replica of one shard hold back every apply that changes something by
// d, from the start of the ensemble to its end: in process with the hook
// router.Shard.SetApplyLag, in separate processes with the same hook set at startup from the
// test knobs (internal/testknobs) corralproc passes to that server, which then runs a
// corraltesting build. It cannot change while a test runs, since a process reads its knobs only
// at startup; tests that lag set it up front in both modes.
type lag struct {
	server int // 0-based
	shard  uint64
	d      time.Duration
}

// ensemble is what the guarantee tests need from a running ensemble of numServers servers and
// numShards data shards with hash placement, in either mode.
type ensemble interface {
	// Addrs returns the client addresses of all servers (running or not).
	Addrs() []string
	// Stop takes server i away for good: in process it is closed (cluster.Node.Close), a
	// process gets SIGKILL — a crash, which is what the tests that stop a server are about
	// (the server does not get to finish what it was doing).
	Stop(i int)
	// router returns server i's router when the servers run in this process, nil when they are
	// separate processes or i is stopped. Tests use it to observe (how far a replica lags, which
	// shards hold a transaction prepared) and to check that the servers place paths as the test
	// expects, never to make anything happen.
	router(i int) *router.Router
}

// placement is the placement every server uses (hash, the default: startEnsemble checks it):
// router.Lookup is a pure function of the path and the data shards, so this router without a
// server answers as every server's does.
var placement = func() *router.Router {
	tags := make([]uint8, numShards)
	for i := range tags {
		tags[i] = uint8(i + 1)
	}
	return router.New(dataShards, tags, router.PlaceHash, nil)
}()

// shardOf returns the data shard that holds path.
func shardOf(path string) uint64 { return placement.Lookup(path).ID }

// startEnsemble starts the ensemble of a test in mode m with the given lagging replicas, and
// stops it when the test ends.
func startEnsemble(t *testing.T, m mode, lags ...lag) ensemble {
	t.Helper()
	for _, l := range lags {
		if l.server < 0 || l.server >= numServers || !slices.Contains(dataShards, l.shard) || l.d <= 0 {
			t.Fatalf("bad lag %+v", l)
		}
	}
	if m == multiProcess {
		return startProcesses(t, lags)
	}
	c := &inproc{startCluster(t)}
	for _, l := range lags {
		testcluster.SetApplyLag(t, c.c.Server(l.server).Router().Shard(l.shard), l.d)
	}
	return c
}

// inproc is an in-process ensemble.
type inproc struct{ c *testcluster.Cluster }

func (e *inproc) Addrs() []string { return e.c.Addrs() }
func (e *inproc) Stop(i int)      { e.c.Stop(i) }
func (e *inproc) router(i int) *router.Router {
	if s := e.c.Server(i); s != nil {
		return s.Router()
	}
	return nil
}

// startCluster starts the in-process ensemble with the default zoo.cfg placement, which must be
// hash.
func startCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	c := testcluster.Start(t, testcluster.Options{Servers: numServers, Shards: numShards})
	for i := 0; i < numServers; i++ {
		if p := c.Server(i).Router().Placement(); p != router.PlaceHash {
			t.Fatalf("server %d: corral.placement is %v by default, want hash", i+1, p)
		}
	}
	return c
}

// procs is a multi-process ensemble.
type procs struct {
	t *testing.T
	e *corralproc.Ensemble
}

func (e *procs) Addrs() []string           { return e.e.Addrs() }
func (e *procs) router(int) *router.Router { return nil }
func (e *procs) Stop(i int) {
	if err := e.e.Kill(i); err != nil {
		e.t.Fatalf("kill server %d: %v", i+1, err)
	}
}

// startProcesses starts three corral processes with four data shards and the timing of the
// in-process ensemble (tickTime 500 ms, so that 2 s session timeouts are allowed), each server
// with its lags as test knobs. It checks, with the parser the binary runs, that every zoo.cfg
// gives hash placement, that every lagging server logged exactly the lags asked for, and that
// the servers run the data shards the tests name. When the test failed, the tail of every
// server's log goes to the test log.
func startProcesses(t *testing.T, lags []lag) *procs {
	t.Helper()
	knobs := map[int]testknobs.Knobs{}
	for _, l := range lags {
		k := knobs[l.server]
		if k.ApplyLag == nil {
			k.ApplyLag = map[uint64]time.Duration{}
		}
		k.ApplyLag[l.shard] = l.d
		knobs[l.server] = k
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // a first build of the binary included
	defer cancel()
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: numServers, Shards: numShards,
		TickTime: 500 * time.Millisecond, ServerKnobs: knobs})
	if err != nil {
		t.Fatalf("start %d corral processes: %v", numServers, err)
	}
	t.Cleanup(func() { e.Close() })
	t.Cleanup(func() { // runs before Close, which removes the logs
		if !t.Failed() {
			return
		}
		for i := 0; i < numServers; i++ {
			data, _ := os.ReadFile(e.LogPath(i))
			t.Logf("--- tail of server %d's log (%s) ---\n%s", i+1, e.LogPath(i), corralproc.Tail(data, 40))
		}
	})
	for i := 0; i < numServers; i++ {
		cfg, err := cluster.LoadConfig(e.ConfigPath(i), nil)
		if err != nil {
			t.Fatalf("server %d: zoo.cfg: %v", i+1, err)
		}
		if cfg.Placement != router.PlaceHash {
			t.Fatalf("server %d: corral.placement is %v by default, want hash", i+1, cfg.Placement)
		}
		if k, ok := knobs[i]; ok {
			logged, err := os.ReadFile(e.LogPath(i))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(logged, []byte(`knobs="`+k.String()+`"`)) {
				t.Fatalf("server %d: its log does not show the test knobs %s", i+1, k)
			}
		}
		ls, err := e.ShardLeaders(ctx, i)
		if err != nil {
			t.Fatalf("server %d: %v", i+1, err)
		}
		var ids []uint64
		for _, l := range ls {
			if l.Shard != cluster.MetaShardID {
				ids = append(ids, l.Shard)
			}
		}
		if !slices.Equal(ids, dataShards) {
			t.Fatalf("server %d runs the data shards %v, the tests name %v", i+1, ids, dataShards)
		}
	}
	if len(lags) > 0 {
		t.Logf("lagging replicas (test knobs): %+v", lags)
	}
	return &procs{t: t, e: e}
}
