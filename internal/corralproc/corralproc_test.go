package corralproc_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/zktest"
	"go.uber.org/goleak"

	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/internal/testknobs"
)

func TestMain(m *testing.M) {
	// The corral binary corralproc built for this process goes with it.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		corralproc.RemoveBinary()
		os.Exit(code)
	}))
}

func TestEnsembleKillRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: 2, TickTime: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if _, err := os.Stat(e.Dir()); !os.IsNotExist(err) {
			t.Errorf("ensemble dir %s still exists after Close (err %v)", e.Dir(), err)
		}
	})
	t.Logf("3 servers serving after %v (binary %s) at %s", time.Since(began).Round(time.Millisecond), e.Binary(), e.ConnectString())

	if e.Size() != 3 || len(e.Addrs()) != 3 || strings.Count(e.ConnectString(), ",") != 2 {
		t.Fatalf("shape: size %d, addrs %v, connect %q", e.Size(), e.Addrs(), e.ConnectString())
	}
	cfg, err := os.ReadFile(e.ConfigPath(0))
	if err != nil || !bytes.Contains(cfg, []byte("corral.shards=2\n")) || !bytes.Contains(cfg, []byte("server.3=127.0.0.1:")) {
		t.Fatalf("zoo.cfg (%v):\n%s", err, cfg)
	}
	for i := range 3 {
		if out, err := corralproc.FourLetterWord(ctx, e.Addr(i), "ruok"); err != nil || out != "imok" {
			t.Fatalf("server %d ruok = %q, %v", i, out, err)
		}
	}

	// Write via server 1, read via server 3 after sync.
	c1 := zktest.Connect(t, ctx, e.Addr(0))
	if p, err := c1.Create("/corralproc", []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil || p != "/corralproc" {
		t.Fatalf("create = %q, %v", p, err)
	}
	c3 := zktest.Connect(t, ctx, e.Addr(2))
	if _, err := c3.Sync("/corralproc"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if data, st, err := c3.Get("/corralproc"); err != nil || string(data) != "v1" || st.Version != 0 {
		t.Fatalf("get via server 3 = %q %+v %v", data, st, err)
	}
	c1.Close()
	c3.Close()

	// SIGKILL the server leading the session shard (the hardest case), write
	// via another.
	victim := e.Leader()
	if victim < 0 {
		victim = 0
	}
	if err := e.Kill(victim); err != nil {
		t.Fatalf("kill %d: %v", victim, err)
	}
	if e.Running(victim) || e.Pid(victim) != 0 {
		t.Fatalf("server %d still running after Kill", victim)
	}
	if err := e.Kill(victim); !errors.Is(err, corralproc.ErrNotRunning) {
		t.Fatalf("second Kill = %v, want ErrNotRunning", err)
	}
	t.Logf("killed server %d at %v", victim, time.Since(began).Round(time.Millisecond))
	// A request forwarded to the dead server as Raft leader, before the
	// survivors notice, waits for the proposal timeout; wait for the new
	// leaders instead (ShardLeaders reads the admin port).
	if err := e.WaitLeaders(ctx); err != nil {
		t.Fatalf("leaders after kill: %v", err)
	}
	t.Logf("new leaders at %v", time.Since(began).Round(time.Millisecond))
	other := (victim + 1) % 3
	w := zktest.Connect(t, ctx, e.Addr(other))
	t.Logf("connected to server %d at %v", other, time.Since(began).Round(time.Millisecond))
	if _, err := w.Set("/corralproc", []byte("v2"), 0); err != nil {
		t.Fatalf("set via server %d with server %d down: %v", other, victim, err)
	}
	w.Close()
	t.Logf("written via server %d at %v", other, time.Since(began).Round(time.Millisecond))

	// Someone takes the killed server's client port: Restart moves it.
	oldAddr := e.Addr(victim)
	squat, err := net.Listen("tcp", oldAddr)
	if err != nil {
		t.Fatalf("occupy %s: %v", oldAddr, err)
	}
	defer squat.Close()
	restarted := time.Now()
	if err := e.Restart(ctx, victim); err != nil {
		t.Fatalf("restart %d: %v", victim, err)
	}
	t.Logf("server %d serving again after %v", victim, time.Since(restarted).Round(time.Millisecond))
	if e.Addr(victim) == oldAddr {
		t.Fatalf("server %d kept the occupied address %s", victim, oldAddr)
	}
	r := zktest.Connect(t, ctx, e.Addr(victim))
	if _, err := r.Sync("/corralproc"); err != nil {
		t.Fatalf("sync on restarted server: %v", err)
	}
	if data, st, err := r.Get("/corralproc"); err != nil || string(data) != "v2" || st.Version != 1 {
		t.Fatalf("restarted server reads %q %+v %v", data, st, err)
	}

	// Stop is SIGTERM and waits.
	r.Close()
	if err := e.Stop(victim); err != nil || e.Running(victim) {
		t.Fatalf("stop: %v (running %v)", err, e.Running(victim))
	}
	log, err := os.ReadFile(e.LogPath(victim))
	if err != nil || !bytes.Contains(log, []byte("shutting down")) {
		t.Fatalf("log of a SIGTERMed server lacks the shutdown line (%v):\n%s", err, corralproc.Tail(log, 10))
	}

	// StartOne moves a server whose port was taken as Restart does.
	oldAddr = e.Addr(victim)
	squat2, err := net.Listen("tcp", oldAddr)
	if err != nil {
		t.Fatalf("occupy %s: %v", oldAddr, err)
	}
	defer squat2.Close()
	if err := e.StartOne(ctx, victim); err != nil {
		t.Fatalf("start one %d: %v", victim, err)
	}
	if e.Addr(victim) == oldAddr {
		t.Fatalf("server %d kept the occupied address %s", victim, oldAddr)
	}
}

func TestStartFailsWithLog(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	e, err := corralproc.Start(ctx, corralproc.Options{Config: map[string]string{"corral.shards": "0"}})
	if err == nil {
		e.Close()
		t.Fatalf("Start with a broken zoo.cfg succeeded")
	}
	if !errors.Is(err, corralproc.ErrExited) {
		t.Fatalf("error is not ErrExited: %v", err)
	}
	// The server's own complaint is in the error.
	if !strings.Contains(err.Error(), "corral.shards") || !strings.Contains(err.Error(), "tail of") {
		t.Fatalf("error lacks the log tail: %v", err)
	}
	t.Logf("failed in %v: %v", time.Since(began).Round(time.Millisecond), err)
}

// TestServerConfig: Options.ServerConfig adds keys to one server's zoo.cfg only, after
// Options.Config (its value wins); Options.ServerKnobs replaces Options.Knobs for one server.
// The servers start with them, and each logs its own knobs, which only the corraltesting
// build Start chose for them reads.
func TestServerConfig(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 2, Shards: 2, TickTime: 500 * time.Millisecond,
		Config:       map[string]string{"maxClientCnxns": "50"},
		ServerConfig: map[int]map[string]string{1: {"maxClientCnxns": "77", "minSessionTimeout": "1000"}},
		Knobs:        testknobs.Knobs{ApplyLag: map[uint64]time.Duration{2: time.Millisecond}},
		ServerKnobs:  map[int]testknobs.Knobs{1: {ApplyLag: map[uint64]time.Duration{3: 2 * time.Millisecond}}},
	})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer e.Close()
	cfg0, err0 := os.ReadFile(e.ConfigPath(0))
	cfg1, err1 := os.ReadFile(e.ConfigPath(1))
	if err0 != nil || err1 != nil {
		t.Fatalf("read zoo.cfg: %v %v", err0, err1)
	}
	if !bytes.Contains(cfg0, []byte("\nmaxClientCnxns=50\n")) || bytes.Contains(cfg0, []byte("minSessionTimeout")) {
		t.Fatalf("server 0's zoo.cfg should have only Options.Config's key:\n%s", cfg0)
	}
	if bytes.Count(cfg1, []byte("maxClientCnxns=")) != 1 || !bytes.Contains(cfg1, []byte("\nmaxClientCnxns=77\n")) ||
		!bytes.Contains(cfg1, []byte("\nminSessionTimeout=1000\n")) {
		t.Fatalf("server 1's zoo.cfg should have its own keys, ServerConfig's value replacing Config's:\n%s", cfg1)
	}
	if err := corralproc.CheckTestingBinary(ctx, e.Binary()); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"applyLag=2:1ms", "applyLag=3:2ms"} {
		logged, err := os.ReadFile(e.LogPath(i))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(logged, []byte("test knobs set from the environment")) || !bytes.Contains(logged, []byte(want)) {
			t.Fatalf("server %d's log does not show the knobs %s:\n%s", i, want, corralproc.Tail(logged, 20))
		}
	}
}

// TestProductionBinaryHasNoKnobs: the binary built without tags has no code that reads test
// knobs (the linker left testknobs.FromEnv out) and refuses to run with knobs; the
// corraltesting build has it.
func TestProductionBinaryHasNoKnobs(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prod, err := corralproc.Binary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tagged, err := corralproc.TestingBinary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const sym = "github.com/corral/corral/internal/testknobs.FromEnv"
	for bin, want := range map[string]bool{prod: false, tagged: true} {
		out, err := exec.CommandContext(ctx, "go", "tool", "nm", bin).Output()
		if err != nil {
			t.Fatalf("go tool nm %s: %v", bin, err)
		}
		if got := bytes.Contains(out, []byte(" "+sym+"\n")); got != want {
			t.Errorf("%s has %s: %v, want %v", bin, sym, got, want)
		}
	}
	if err := corralproc.CheckTestingBinary(ctx, prod); err == nil || !strings.Contains(err.Error(), "make build-testing") {
		t.Errorf("production binary checked as a testing build: %v", err)
	}
	_, err = corralproc.Start(ctx, corralproc.Options{Binary: prod, Knobs: testknobs.Knobs{ApplyDelay: time.Millisecond}})
	if err == nil || !strings.Contains(err.Error(), "production build") {
		t.Errorf("Start with knobs and a production binary: %v", err)
	}
}
