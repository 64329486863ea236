package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/corral/corral/internal/apachezk"
)

// Shape is the ensemble an experiment asks for.
type Shape struct {
	Servers int
	Shards  int // Corral's corral.shards; Apache ZooKeeper is always one group
	// ApplyDelay is Corral's apply delay test knob (internal/testknobs; a corraltesting build
	// only): a delay injected into each applied write so commits become latency-bound (zero:
	// none). Apache ZooKeeper has no such knob.
	ApplyDelay time.Duration
}

func (s Shape) String() string {
	str := fmt.Sprintf("%d servers", s.Servers)
	if s.Shards > 0 {
		str += fmt.Sprintf(", %d shards", s.Shards)
	}
	if s.ApplyDelay > 0 {
		str += fmt.Sprintf(", applyDelay %v", s.ApplyDelay)
	}
	return str
}

// Cluster is a running ensemble the benchmark can address and, for the targets it starts
// itself, crash and restart.
type Cluster interface {
	// Addrs are the client addresses, index i for server i.
	Addrs() []string
	// Kill crashes server i (SIGKILL).
	Kill(i int) error
	// Restart starts the killed server i again with its data and waits until it serves.
	Restart(ctx context.Context, i int) error
	// Leader returns the index of the server that leads (ZooKeeper: `srvr` says "Mode:
	// leader"; Corral: the server leading the most shards), or -1.
	Leader(ctx context.Context) int
	// Follower returns the server to kill as "a follower" (ZooKeeper: the first one that is not
	// the leader; Corral: the server leading the fewest shards, not Leader's choice), or -1.
	Follower(ctx context.Context) int
	// Close stops every server the benchmark started.
	Close() error
}

// Target starts ensembles of one kind.
type Target interface {
	// Name labels the target in every output ("zookeeper", "corral", or "external").
	Name() string
	// Start launches an ensemble of the given shape and waits until every server serves.
	Start(ctx context.Context, s Shape) (Cluster, error)
	// Sharded reports whether Shape.Shards and Shape.ApplyDelay mean anything to the target.
	Sharded() bool
	// Managed reports whether the benchmark starts the servers itself (so it can choose the
	// shape and crash servers); false for --servers.
	Managed() bool
}

// ErrUnsupported is returned for operations a target cannot do (killing an external server).
var ErrUnsupported = errors.New("bench: not supported by this target")

// baseConfig holds the zoo.cfg keys both targets get: the paper's 2,000 requests in process
// (ZooKeeper's globalOutstandingLimit defaults to 1,000) and no per-IP connection limit (all
// benchmark sessions come from 127.0.0.1; ZooKeeper's default is 60).
func baseConfig() map[string]string {
	return map[string]string{
		"globalOutstandingLimit": "2000",
		"maxClientCnxns":         "0",
	}
}

// zkTarget runs Apache ZooKeeper 3.8 from the Debian package (internal/apachezk).
type zkTarget struct {
	tick    time.Duration
	keepDir bool
}

func (zkTarget) Name() string  { return "zookeeper" }
func (zkTarget) Sharded() bool { return false }
func (zkTarget) Managed() bool { return true }

func (t zkTarget) Start(ctx context.Context, s Shape) (Cluster, error) {
	e, err := apachezk.Start(ctx, apachezk.Options{
		Servers:  s.Servers,
		TickTime: t.tick,
		Config:   baseConfig(),
		Heap:     "1g",
		KeepDir:  t.keepDir,
	})
	if err != nil {
		return nil, err
	}
	return zkCluster{e}, nil
}

type zkCluster struct{ e *apachezk.Ensemble }

func (c zkCluster) Addrs() []string                          { return c.e.Addrs() }
func (c zkCluster) Kill(i int) error                         { return c.e.Kill(i) }
func (c zkCluster) Restart(ctx context.Context, i int) error { return c.e.Start(ctx, i) }
func (c zkCluster) Leader(context.Context) int               { return c.e.Leader() }
func (c zkCluster) Follower(ctx context.Context) int {
	return firstOther(allRunning(len(c.Addrs())), c.Leader(ctx))
}
func (c zkCluster) Close() error { return c.e.Close() }

// Pid is server i's JVM process id, 0 when it is not running (matrix: RSS).
func (c zkCluster) Pid(i int) int { return c.e.Pid(i) }

// externalTarget is an ensemble someone else runs (--servers).
type externalTarget struct {
	addrs []string
}

func (externalTarget) Name() string  { return "external" }
func (externalTarget) Sharded() bool { return false }
func (externalTarget) Managed() bool { return false }

func (t externalTarget) Start(ctx context.Context, _ Shape) (Cluster, error) {
	for _, a := range t.addrs {
		out, err := fourLetterWord(ctx, a, "ruok")
		if err != nil {
			return nil, fmt.Errorf("bench: %s: %w", a, err)
		}
		if strings.TrimSpace(out) != "imok" {
			return nil, fmt.Errorf("bench: %s answered ruok with %q", a, out)
		}
	}
	return externalCluster(t), nil
}

type externalCluster externalTarget

func (c externalCluster) Addrs() []string                  { return c.addrs }
func (externalCluster) Kill(int) error                     { return ErrUnsupported }
func (externalCluster) Restart(context.Context, int) error { return ErrUnsupported }
func (c externalCluster) Leader(ctx context.Context) int   { return leaderBySrvr(ctx, c.addrs) }
func (c externalCluster) Follower(ctx context.Context) int {
	return firstOther(allRunning(len(c.addrs)), c.Leader(ctx))
}
func (externalCluster) Close() error   { return nil }
func (externalCluster) String() string { return "external" }
func parseAddrs(s string) []string     { return splitList(s) }
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// parseInts parses "3,5,7".
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseFloats parses "0,10,50".
func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range splitList(s) {
		n, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// allRunning is n servers, all taken as running.
func allRunning(n int) []bool {
	r := make([]bool, n)
	for i := range r {
		r[i] = true
	}
	return r
}

// leaderBySrvr asks each server for its srvr Mode and returns the first leader (or standalone).
func leaderBySrvr(ctx context.Context, addrs []string) int {
	for i, a := range addrs {
		if m, err := srvrMode(ctx, a); err == nil && (m == "leader" || m == "standalone") {
			return i
		}
	}
	return -1
}

func srvrMode(ctx context.Context, addr string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out, err := fourLetterWord(cctx, addr, "srvr")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "Mode:"); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("no Mode line in srvr reply %q", out)
}

func fourLetterWord(ctx context.Context, addr, cmd string) (string, error) {
	return apachezk.FourLetterWord(ctx, addr, cmd)
}
