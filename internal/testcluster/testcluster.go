package testcluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/procutil"
	"github.com/corral/corral/internal/testknobs"
)

// Options shape a test ensemble.
type Options struct {
	Servers int
	Shards  int
	// Extra zoo.cfg lines for every server.
	Extra []string
	// Knobs are test knobs for every server (package internal/testknobs; zoo.cfg has none).
	Knobs testknobs.Knobs
	// Observers are started after the Servers participants: their server.N lines end in
	// :observer and their own zoo.cfg says peerType=observer (non-voting replicas).
	Observers int
	// Admin gives every server an admin HTTP port (AdminAddr).
	Admin bool
	// Log receives the servers' logs (default: discarded unless CORRAL_TEST_LOG=1).
	Log *slog.Logger
}

// Cluster is a running test ensemble.
type Cluster struct {
	t       testing.TB
	opts    Options
	dir     string
	peers   string // the server.N lines of the first start
	cfgs    []cluster.Config
	mu      sync.Mutex
	servers []*cluster.Node
}

// Start starts an ensemble and waits until every server accepts clients. It is closed by
// t.Cleanup.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if !opts.Knobs.IsZero() && !testknobs.Enabled {
		t.Skip("test knobs (testcluster.Options.Knobs) need a build with -tags corraltesting (make test does)")
	}
	if opts.Servers <= 0 {
		opts.Servers = 3
	}
	if opts.Shards <= 0 {
		opts.Shards = 1
	}
	if opts.Log == nil {
		if os.Getenv("CORRAL_TEST_LOG") == "1" {
			opts.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		} else {
			opts.Log = slog.New(slog.NewTextHandler(discard{}, nil))
		}
	}
	// Ports are free when chosen and bound a moment later; a test package running beside this
	// one may take one in between. Such a start is tried again on fresh ports.
	for attempt := 1; ; attempt++ {
		c := &Cluster{t: t, opts: opts, dir: t.TempDir()}
		err := c.startAll()
		if err == nil {
			t.Cleanup(c.Close)
			return c
		}
		c.Close()
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("testcluster: %v", err)
		}
		t.Logf("testcluster: %v; starting again on other ports", err)
	}
}

// startAll writes every server's configuration on fresh ports and starts them all at once.
func (c *Cluster) startAll() error {
	opts := c.opts
	n := opts.Servers + opts.Observers
	// Client, Raft and admin ports in one reservation, so no two of them coincide: an admin port
	// reserved on its own once landed on another server's Raft port (tests/cluster
	// TestOnlineMove: its POST /move got EOF).
	ports := FreePorts(c.t, 3*n)
	var peers strings.Builder
	for i := 1; i <= n; i++ {
		role := ""
		if i > opts.Servers {
			role = ":observer"
		}
		fmt.Fprintf(&peers, "server.%d=127.0.0.1:%d:%d%s\n", i, ports[n+i-1], ports[n+i-1]+1, role)
	}
	c.peers = peers.String()
	for i := 1; i <= n; i++ {
		var extra []string
		if i > opts.Servers {
			extra = append(extra, "peerType=observer")
		}
		c.cfgs = append(c.cfgs, c.writeConfig(i, ports[i-1], ports[2*n+i-1], c.peers, extra))
	}
	c.servers = make([]*cluster.Node, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range c.cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.start(i)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("server %d: %w", i+1, err)
		}
	}
	return nil
}

// writeConfig writes server id's myid and zoo.cfg (peers are its server.N lines, extra more
// lines) and loads it.
func (c *Cluster) writeConfig(id, clientPort, adminPort int, peers string, extra []string) cluster.Config {
	c.t.Helper()
	opts := c.opts
	sdir := filepath.Join(c.dir, fmt.Sprintf("server%d", id))
	if err := os.MkdirAll(sdir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	if opts.Admin {
		extra = append(extra, "admin.serverAddress=127.0.0.1", fmt.Sprintf("admin.serverPort=%d", adminPort))
	}
	if opts.Servers == 1 && opts.Observers == 0 && id == 1 {
		peers = ""
	}
	text := fmt.Sprintf("tickTime=500\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\ncorral.shards=%d\nzookeeper.DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=\n%s%s\n",
		sdir, clientPort, opts.Shards, peers, strings.Join(append(extra, opts.Extra...), "\n"))
	if err := os.WriteFile(filepath.Join(sdir, "myid"), []byte(fmt.Sprint(id)), 0o644); err != nil {
		c.t.Fatal(err)
	}
	cfgPath := filepath.Join(sdir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		c.t.Fatal(err)
	}
	cfg, err := cluster.LoadConfig(cfgPath, opts.Log)
	if err != nil {
		c.t.Fatal(err)
	}
	cfg.SetTestingKnobs(opts.Knobs)
	return cfg
}

// NewServer writes the configuration of one more server, to be added to the running ensemble
// online: its zoo.cfg lists the first start's servers and itself, and says corral.join=true (or,
// for an observer, peerType=observer). It is not started: add it through a member's admin
// endpoint and start it with Restart, in either order. It returns the server's index; its id is
// index+1.
func (c *Cluster) NewServer(observer bool) int {
	c.t.Helper()
	ports := FreePorts(c.t, 3)
	c.mu.Lock()
	id := len(c.cfgs) + 1
	c.mu.Unlock()
	line := fmt.Sprintf("server.%d=127.0.0.1:%d:%d", id, ports[1], ports[1]+1)
	extra := []string{"corral.join=true"}
	if observer {
		line += ":observer"
		extra = []string{"peerType=observer"}
	}
	cfg := c.writeConfig(id, ports[0], ports[2], c.peers+line+"\n", extra)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfgs = append(c.cfgs, cfg)
	c.servers = append(c.servers, nil)
	return len(c.cfgs) - 1
}

// RaftAddr returns server i's Raft address (host:peerPort).
func (c *Cluster) RaftAddr(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfgs[i].Self().RaftAddress()
}

// AdminAddr returns server i's admin HTTP address ("" without Options.Admin).
func (c *Cluster) AdminAddr(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfgs[i].AdminPort <= 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d", c.cfgs[i].AdminAddress, c.cfgs[i].AdminPort)
}

// DataDir returns server i's dataDir (where its myid, zoo.cfg and, by default, its audit log
// are).
func (c *Cluster) DataDir(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfgs[i].DataDir
}

func (c *Cluster) start(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c.mu.Lock()
	cfg := c.cfgs[i]
	c.mu.Unlock()
	s, err := cluster.Start(ctx, cfg, c.opts.Log)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.servers[i] = s
	c.mu.Unlock()
	return nil
}

// Addrs returns the client addresses of all servers (running or not).
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.cfgs))
	for i, cfg := range c.cfgs {
		out[i] = cfg.ClientListenAddr()
	}
	return out
}

// ConnectString returns "host:port,host:port,...".
func (c *Cluster) ConnectString() string { return strings.Join(c.Addrs(), ",") }

// Server returns server i (0-based), nil if stopped.
func (c *Cluster) Server(i int) *cluster.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[i]
}

// Stop stops server i (0-based).
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	s := c.servers[i]
	c.servers[i] = nil
	c.mu.Unlock()
	if s != nil {
		s.Close()
	}
}

// TryStart starts server i like Restart and returns Start's error instead of failing the test.
func (c *Cluster) TryStart(i int) error { return c.start(i) }

// Restart starts a stopped server i again from its data directory (or for the first time, a
// server from NewServer).
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if err := c.start(i); err != nil {
		c.t.Fatalf("testcluster: restart server %d: %v", i+1, err)
	}
}

// Close stops every server.
func (c *Cluster) Close() {
	for i := range c.servers {
		c.Stop(i)
	}
}

// FreePorts returns n distinct free TCP ports on 127.0.0.1 (procutil.FreePorts: from below the
// ephemeral range, so the servers' own outgoing connections cannot take them first).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := procutil.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// ID returns the server id (zoo.cfg's myid) of the server of index i.
func (c *Cluster) ID(i int) uint64 { return c.cfgs[i].MyID }

// Leader returns the index (0-based) of the running server that leads shardID, or -1.
func (c *Cluster) Leader(shardID uint64) int {
	for i := range c.cfgs {
		s := c.Server(i)
		if s == nil {
			continue
		}
		lid, _, ok, err := s.NodeHost().GetLeaderID(shardID)
		if err == nil && ok {
			for j, cfg := range c.cfgs {
				if cfg.MyID == lid && c.Server(j) != nil {
					return j
				}
			}
		}
	}
	return -1
}
