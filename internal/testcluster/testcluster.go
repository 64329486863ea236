package testcluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral/corral/cluster"
)

// Options shape a test ensemble.
type Options struct {
	Servers int
	Shards  int
	// Extra zoo.cfg lines for every server.
	Extra []string
	// Log receives the servers' logs (default: discarded unless CORRAL_TEST_LOG=1).
	Log *slog.Logger
}

// Cluster is a running test ensemble.
type Cluster struct {
	t       testing.TB
	opts    Options
	dir     string
	cfgs    []cluster.Config
	mu      sync.Mutex
	servers []*cluster.Server
}

// Start starts an ensemble and waits until every server accepts clients. It is closed by
// t.Cleanup.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
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
	c := &Cluster{t: t, opts: opts, dir: t.TempDir()}
	ports := FreePorts(t, 2*opts.Servers)
	var peers strings.Builder
	for i := 1; i <= opts.Servers; i++ {
		fmt.Fprintf(&peers, "server.%d=127.0.0.1:%d:%d\n", i, ports[opts.Servers+i-1], ports[opts.Servers+i-1]+1)
	}
	for i := 1; i <= opts.Servers; i++ {
		sdir := filepath.Join(c.dir, fmt.Sprintf("server%d", i))
		if err := os.MkdirAll(sdir, 0o755); err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprintf("tickTime=500\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\ncorral.shards=%d\nzookeeper.DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=\n%s%s\n",
			sdir, ports[i-1], opts.Shards, peers.String(), strings.Join(opts.Extra, "\n"))
		if opts.Servers == 1 {
			text = strings.ReplaceAll(text, peers.String(), "")
		}
		if err := os.WriteFile(filepath.Join(sdir, "myid"), []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		cfgPath := filepath.Join(sdir, "zoo.cfg")
		if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := cluster.LoadConfig(cfgPath, opts.Log)
		if err != nil {
			t.Fatal(err)
		}
		c.cfgs = append(c.cfgs, cfg)
	}
	c.servers = make([]*cluster.Server, opts.Servers)
	var wg sync.WaitGroup
	errs := make([]error, opts.Servers)
	for i := range c.cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.start(i)
		}()
	}
	wg.Wait()
	t.Cleanup(c.Close)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("testcluster: server %d: %v", i+1, err)
		}
	}
	return c
}

func (c *Cluster) start(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := cluster.Start(ctx, c.cfgs[i], c.opts.Log)
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
func (c *Cluster) Server(i int) *cluster.Server {
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

// Restart starts a stopped server i again from its data directory.
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

// FreePorts returns n distinct free TCP ports on 127.0.0.1 (each followed by a free port, for
// the unused election port convention).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var out []int
	var lns []net.Listener
	for len(out) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

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
