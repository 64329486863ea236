package difftest_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/difftest"
)

// Two independent Apache ZooKeeper servers, started once for the package.
// Running the scripts with one as oracle and the other as candidate proves
// the normalisation: any mismatch between two real ZooKeepers is a bug in
// difftest.
var (
	zkOnce    sync.Once
	zkErr     error
	zkServers []*apachezk.Ensemble
)

// oracleOptions is how Corral's differential tests should start their Apache
// ZooKeeper oracle: TTL nodes on, super user, no time-driven container/TTL
// reaping during a run, no fsync (speed; durability is not under test).
func oracleOptions() apachezk.Options {
	return apachezk.Options{
		JVMFlags: []string{apachezk.FlagExtendedTypes, apachezk.FlagSuperDigest, apachezk.FlagNoContainerGC},
		Config:   map[string]string{"forceSync": "no"},
	}
}

func servers(t *testing.T) (oracle, candidate difftest.Target) {
	t.Helper()
	zkOnce.Do(func() {
		if zkErr = apachezk.Available(); zkErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e, err := apachezk.Start(ctx, oracleOptions())
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					zkErr = err
					return
				}
				zkServers = append(zkServers, e)
			}()
		}
		wg.Wait()
	})
	if zkErr != nil {
		t.Fatalf("Apache ZooKeeper is required: %v", zkErr)
	}
	return difftest.Target{Name: "apache-zk-A", Connect: zkServers[0].ConnectString()},
		difftest.Target{Name: "apache-zk-B", Connect: zkServers[1].ConnectString()}
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, e := range zkServers {
		e.Close()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func TestFixedScriptsZKvsZK(t *testing.T) {
	oracle, candidate := servers(t)
	for _, s := range difftest.Scripts() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			difftest.Run(t, oracle, candidate, s)
		})
	}
}

// randomSeeds honours DIFFTEST_SEEDS ("1,2,3") and DIFFTEST_STEPS to replay
// or extend the random runs.
func randomSeeds(t *testing.T) ([]int64, int) {
	seeds := []int64{1, 2, 3, 4}
	steps := 120
	if v := os.Getenv("DIFFTEST_SEEDS"); v != "" {
		seeds = nil
		for _, f := range strings.Split(v, ",") {
			s, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("DIFFTEST_SEEDS: %v", err)
			}
			seeds = append(seeds, s)
		}
	}
	if v := os.Getenv("DIFFTEST_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("DIFFTEST_STEPS: %v", err)
		}
		steps = n
	}
	return seeds, steps
}

func TestRandomScriptsZKvsZK(t *testing.T) {
	oracle, candidate := servers(t)
	seeds, steps := randomSeeds(t)
	for _, seed := range seeds {
		s := difftest.RandomScript(seed, steps)
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			difftest.Run(t, oracle, candidate, s)
		})
	}
}

func TestRandomScriptIsReproducible(t *testing.T) {
	a, b := difftest.RandomScript(42, 300), difftest.RandomScript(42, 300)
	c := difftest.RandomScript(43, 300)
	if len(a.Steps) != 300 || a.Seed != 42 {
		t.Fatalf("got %d steps, seed %d", len(a.Steps), a.Seed)
	}
	same, kinds := true, map[difftest.Op]int{}
	for i := range a.Steps {
		if a.Steps[i].String() != b.Steps[i].String() {
			t.Fatalf("step %d differs for the same seed: %s vs %s", i, a.Steps[i], b.Steps[i])
		}
		if a.Steps[i].String() != c.Steps[i].String() {
			same = false
		}
		kinds[a.Steps[i].Op]++
	}
	if same {
		t.Fatalf("seeds 42 and 43 give the same script")
	}
	for _, op := range []difftest.Op{difftest.OpCreate, difftest.OpDelete, difftest.OpExists, difftest.OpGetData,
		difftest.OpSetData, difftest.OpGetChildren, difftest.OpGetChildren2, difftest.OpGetACL, difftest.OpSetACL,
		difftest.OpMulti, difftest.OpSync, difftest.OpAddAuth, difftest.OpEvents, difftest.OpCloseSession} {
		if kinds[op] == 0 {
			t.Errorf("300 random steps contain no %v", op)
		}
	}
}

// TestCandidateDifferenceIsReported runs a real difference end to end: the
// candidate is an Apache ZooKeeper without TTL support, so the first TTL
// create must be reported with both results.
func TestCandidateDifferenceIsReported(t *testing.T) {
	oracle, _ := servers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := oracleOptions()
	opts.JVMFlags = []string{apachezk.FlagNoContainerGC} // no extendedTypesEnabled
	e, err := apachezk.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer e.Close()
	candidate := difftest.Target{Name: "zk-without-ttl", Connect: e.ConnectString()}

	var script difftest.Script
	for _, s := range difftest.Scripts() {
		if s.Name == "create-modes" {
			script = s
		}
	}
	ttlStep := -1
	for i, st := range script.Steps {
		if st.Op == difftest.OpCreate && st.Flags == 5 {
			ttlStep = i
			break
		}
	}
	rep, err := difftest.Execute(ctx, oracle, candidate, script, difftest.Options{})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if rep.OK() {
		t.Fatalf("ZooKeeper with and without TTL support agreed:\n%s", rep)
	}
	m := rep.Mismatch
	if m.Step != ttlStep || m.Diff.Field != "err" || m.Oracle.Err != "" || m.Candidate.Err != "UNIMPLEMENTED" {
		t.Fatalf("unexpected mismatch (want step %d err \"\" vs UNIMPLEMENTED):\n%s", ttlStep, rep)
	}
	text := rep.String()
	for _, want := range []string{fmt.Sprintf("step %d:", ttlStep), "create \"/m/ttl\"", "UNIMPLEMENTED", "preceding steps", "zk-without-ttl"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	t.Logf("report:\n%s", text)
}

// TestRawStep exercises the raw-wire extension point with go-zookeeper
// standing in for the wire package: paths come back relative to the prefix,
// the raw session is paired across targets, and its ephemeral's owner is
// normalised through that pairing.
func TestRawStep(t *testing.T) {
	oracle, candidate := servers(t)
	var mu sync.Mutex
	var conns []*zk.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	raw := func(ctx context.Context, addr string) (difftest.Result, error) {
		c, ev, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quiet{}))
		if err != nil {
			return difftest.Result{}, err
		}
		mu.Lock()
		conns = append(conns, c) // kept open: its ephemeral must stay
		mu.Unlock()
		for e := range ev {
			if e.State == zk.StateHasSession {
				break
			}
		}
		p, err := c.Create(difftest.Chroot(ctx)+"/raw", []byte("r"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		if err != nil {
			return difftest.Result{Err: difftest.ErrName(err)}, nil
		}
		return difftest.Result{Path: p, Session: c.SessionID(), Values: []string{"created"}}, nil
	}
	s := difftest.Script{Name: "raw", Steps: []difftest.Step{
		difftest.Raw(0, "create-ephemeral", raw),
		difftest.Exists(0, "/raw", false),
		difftest.Children2(1, "/", false),
	}}
	rep, err := difftest.Execute(context.Background(), oracle, candidate, s, difftest.Options{})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if !rep.OK() {
		t.Fatal(rep)
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}
