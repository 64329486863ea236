package corralproc_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/zktest"
	"go.uber.org/goleak"

	"github.com/corral/corral/internal/corralproc"
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
// Options.Config (its value wins), and the servers start with it.
func TestServerConfig(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 2, Shards: 2, TickTime: 500 * time.Millisecond,
		Config:       map[string]string{"corral.testing.applyLag": "2:1ms"},
		ServerConfig: map[int]map[string]string{1: {"corral.testing.applyLag": "3:2ms", "maxClientCnxns": "77"}},
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
	if !bytes.Contains(cfg0, []byte("\ncorral.testing.applyLag=2:1ms\n")) || bytes.Contains(cfg0, []byte("maxClientCnxns")) {
		t.Fatalf("server 0's zoo.cfg should have only Options.Config's key:\n%s", cfg0)
	}
	if bytes.Count(cfg1, []byte("corral.testing.applyLag=")) != 1 || !bytes.Contains(cfg1, []byte("\ncorral.testing.applyLag=3:2ms\n")) ||
		!bytes.Contains(cfg1, []byte("\nmaxClientCnxns=77\n")) {
		t.Fatalf("server 1's zoo.cfg should have its own keys, ServerConfig's value replacing Config's:\n%s", cfg1)
	}
}
