package apachezk_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/zktest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func start(t *testing.T, ctx context.Context, opts apachezk.Options) *apachezk.Ensemble {
	t.Helper()
	if err := apachezk.Available(); err != nil {
		t.Fatalf("Apache ZooKeeper is required: %v", err)
	}
	began := time.Now()
	e, err := apachezk.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start %d servers: %v", opts.Servers, err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if _, err := os.Stat(e.Dir()); !os.IsNotExist(err) {
			t.Errorf("ensemble dir %s still exists after Close (err %v)", e.Dir(), err)
		}
	})
	t.Logf("%d server(s) serving after %v at %s", e.Size(), time.Since(began).Round(time.Millisecond), e.ConnectString())
	return e
}

func TestAvailable(t *testing.T) {
	if err := apachezk.Available(); err != nil {
		t.Fatalf("Available: %v", err)
	}
}

func TestStandalone(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := start(t, ctx, apachezk.Options{
		JVMFlags: []string{apachezk.FlagExtendedTypes},
		Config:   map[string]string{"maxClientCnxns": "100"},
	})

	if got := e.Leader(); got != 0 {
		t.Fatalf("Leader() = %d, want 0", got)
	}
	if m, err := e.Mode(ctx, 0); err != nil || m != "standalone" {
		t.Fatalf("Mode = %q, %v; want standalone", m, err)
	}
	if len(e.Addrs()) != 1 || e.ConnectString() != e.Addrs()[0] || !strings.HasPrefix(e.Addr(0), "127.0.0.1:") {
		t.Fatalf("addresses: %v / %q", e.Addrs(), e.ConnectString())
	}
	cfg, err := os.ReadFile(e.ServerDir(0) + "/zoo.cfg")
	if err != nil || !bytes.Contains(cfg, []byte("maxClientCnxns=100\n")) || !bytes.Contains(cfg, []byte("clientPortAddress=127.0.0.1\n")) {
		t.Fatalf("zoo.cfg lacks configured keys (%v):\n%s", err, cfg)
	}
	if out, err := apachezk.FourLetterWord(ctx, e.Addr(0), "ruok"); err != nil || out != "imok" {
		t.Fatalf("ruok = %q, %v", out, err)
	}

	c := zktest.Connect(t, ctx, e.Addrs()...)
	if p, err := c.Create("/apachezk", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil || p != "/apachezk" {
		t.Fatalf("create = %q, %v", p, err)
	}
	data, st, err := c.Get("/apachezk")
	if err != nil || string(data) != "hello" || st.Version != 0 || st.DataLength != 5 {
		t.Fatalf("get = %q %+v %v", data, st, err)
	}
	// TTL nodes need the extended-types flag passed through JVMFlags.
	if _, err := c.CreateTTL("/ttl", nil, zk.FlagTTL, zk.WorldACL(zk.PermAll), time.Hour); err != nil {
		t.Fatalf("createTTL with %s: %v", apachezk.FlagExtendedTypes, err)
	}
	// The log goes to the server directory through the log4j binding.
	logData, err := os.ReadFile(e.ServerDir(0) + "/zookeeper.log")
	if err != nil || !bytes.Contains(logData, []byte("binding to port")) {
		t.Fatalf("zookeeper.log missing or without startup lines (%v): %s", err, logData)
	}

	// Stop and restart keep the data.
	if err := e.Stop(0); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if e.Running(0) || e.Leader() != -1 {
		t.Fatalf("server still running after Stop")
	}
	if err := e.Stop(0); err == nil {
		t.Fatalf("second Stop succeeded")
	}
	if err := e.Restart(ctx, 0); err != nil {
		t.Fatalf("restart: %v", err)
	}
	c2 := zktest.Connect(t, ctx, e.Addrs()...)
	if data, _, err := c2.Get("/apachezk"); err != nil || string(data) != "hello" {
		t.Fatalf("get after restart = %q, %v", data, err)
	}
}

func TestEnsembleLeaderFailover(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := start(t, ctx, apachezk.Options{Servers: 3, TickTime: 500 * time.Millisecond})

	leader := e.Leader()
	if leader < 0 {
		t.Fatalf("no leader after Start")
	}
	modes := map[string]int{}
	for i := 0; i < e.Size(); i++ {
		m, err := e.Mode(ctx, i)
		if err != nil {
			t.Fatalf("mode %d: %v", i, err)
		}
		modes[m]++
	}
	if modes["leader"] != 1 || modes["follower"] != 2 {
		t.Fatalf("modes = %v, want 1 leader and 2 followers", modes)
	}
	if n := strings.Count(e.ConnectString(), ","); n != 2 {
		t.Fatalf("connect string %q", e.ConnectString())
	}

	// Write through one follower, read through the other after sync.
	var followers []int
	for i := 0; i < 3; i++ {
		if i != leader {
			followers = append(followers, i)
		}
	}
	w := zktest.Connect(t, ctx, e.Addr(followers[0]))
	if _, err := w.Create("/failover", []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}
	r := zktest.Connect(t, ctx, e.Addr(followers[1]))
	if _, err := r.Sync("/failover"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if data, _, err := r.Get("/failover"); err != nil || string(data) != "v1" {
		t.Fatalf("get via other follower = %q, %v", data, err)
	}

	// Kill the leader; the two others elect a new one and keep the data.
	killedAt := time.Now()
	if err := e.Kill(leader); err != nil {
		t.Fatalf("kill leader: %v", err)
	}
	if e.Running(leader) {
		t.Fatalf("killed server still running")
	}
	if err := e.WaitReady(ctx); err != nil {
		t.Fatalf("no new leader: %v", err)
	}
	newLeader := e.Leader()
	if newLeader < 0 || newLeader == leader {
		t.Fatalf("leader after kill = %d (old %d)", newLeader, leader)
	}
	t.Logf("leader %d killed, server %d elected in %v", leader, newLeader, time.Since(killedAt).Round(time.Millisecond))
	survivors := []string{e.Addr(followers[0]), e.Addr(followers[1])}
	c := zktest.Connect(t, ctx, survivors...)
	if _, err := c.Set("/failover", []byte("v2"), 0); err != nil {
		t.Fatalf("set after failover: %v", err)
	}

	// The killed server rejoins as follower and catches up.
	if err := e.Restart(ctx, leader); err != nil {
		t.Fatalf("restart old leader: %v", err)
	}
	if m, err := e.Mode(ctx, leader); err != nil || m != "follower" {
		t.Fatalf("old leader rejoined as %q, %v", m, err)
	}
	old := zktest.Connect(t, ctx, e.Addr(leader))
	if _, err := old.Sync("/failover"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if data, st, err := old.Get("/failover"); err != nil || string(data) != "v2" || st.Version != 1 {
		t.Fatalf("old leader reads %q %+v %v", data, st, err)
	}
}

func TestStartFailsClearly(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// An invalid zoo.cfg makes the JVM exit; Start must report it promptly
	// with the server's own output, not wait for the timeout.
	began := time.Now()
	e, err := apachezk.Start(ctx, apachezk.Options{Config: map[string]string{"tickTime": "not-a-number"}})
	if err == nil {
		e.Close()
		t.Fatalf("Start with a broken config succeeded")
	}
	if time.Since(began) > 30*time.Second {
		t.Fatalf("failure took %v", time.Since(began))
	}
	if !strings.Contains(err.Error(), "exited") {
		t.Fatalf("error does not say the server exited: %v", err)
	}
	t.Logf("error (abridged): %.300s", fmt.Sprint(err))
}
