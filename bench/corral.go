package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/corral/corral/client"
	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/internal/testknobs"
)

// corralTarget runs Corral servers as child processes of the benchmark through
// internal/corralproc: one `corral server --config zoo.cfg` per server, each with its own
// directory holding zoo.cfg, data/myid and server.log, on free loopback ports. A server is
// ready when it answers `ruok` with `imok` (corralproc) and accepts a session (checked here).
type corralTarget struct {
	bin     string
	tick    time.Duration
	keepDir bool
	dir     string // parent of the ensemble directories (default os.TempDir())
}

func (corralTarget) Name() string  { return "corral" }
func (corralTarget) Sharded() bool { return true }
func (corralTarget) Managed() bool { return true }

// FindCorralBinary returns the corral binary to run: explicit if set, else this executable when
// it is corral itself (`corral bench ...` under any file name: bin/corral, bin/corral-testing —
// the corraltesting build that --delay needs —, or a copy of another commit for an A/B), else
// bin/corral in the current directory or in the nearest parent directory holding go.mod (tests
// run in bench/, as a Go test binary).
func FindCorralBinary(explicit string) (string, error) {
	if explicit != "" {
		return checkExecutable(explicit)
	}
	if exe, err := os.Executable(); err == nil && !isTestBinary(exe) {
		return exe, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		cand := filepath.Join(dir, "bin", "corral")
		if _, err := os.Stat(cand); err == nil {
			return checkExecutable(cand)
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return "", fmt.Errorf("bench: %s not found (run `make build`)", cand)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("bench: no bin/corral found (run `make build` or pass --corral-bin)")
		}
		dir = parent
	}
}

// isTestBinary reports whether exe is a Go test binary (`go test` names them <package>.test):
// the only other program that runs the bench package.
func isTestBinary(exe string) bool { return strings.HasSuffix(filepath.Base(exe), ".test") }

func checkExecutable(p string) (string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("bench: corral binary: %w", err)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("bench: %s is not executable", p)
	}
	return filepath.Abs(p)
}

// options is the corralproc configuration of an ensemble of shape s: the benchmark's common
// zoo.cfg keys (baseConfig), corral.shards, and the apply delay test knob when s asks for a
// delay (the binary must then be a corraltesting build, which corralproc checks). With --keep the directories stay and corralproc stops the servers with SIGTERM (so
// their logs end cleanly); otherwise with SIGKILL, as the data is thrown away.
func (t corralTarget) options(s Shape) corralproc.Options {
	cfg := baseConfig()
	// CORRAL_BENCH_CONFIG=key=value[,key=value...] adds zoo.cfg keys to every Corral server
	// (experiments with Corral's own settings, e.g. corral.logdb=shared).
	for _, kv := range strings.Split(os.Getenv("CORRAL_BENCH_CONFIG"), ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
			cfg[k] = v
		}
	}
	shards := s.Shards
	if shards <= 0 {
		shards = 1
	}
	return corralproc.Options{
		Servers:      max(s.Servers, 1),
		Shards:       shards,
		TickTime:     t.tick,
		Config:       cfg,
		Knobs:        testknobs.Knobs{ApplyDelay: s.ApplyDelay},
		Binary:       t.bin,
		Dir:          t.dir,
		KeepDir:      t.keepDir,
		StartTimeout: 90 * time.Second,
		LogLevel:     os.Getenv("CORRAL_BENCH_LOG_LEVEL"),
	}
}

func (t corralTarget) Start(ctx context.Context, s Shape) (Cluster, error) {
	e, err := corralproc.Start(ctx, t.options(s))
	if err != nil {
		return nil, err
	}
	c := &corralCluster{e: e}
	for i := range e.Size() {
		if err := acceptsSession(ctx, e.Addr(i)); err != nil {
			c.Close()
			return nil, fmt.Errorf("bench: corral server %d: %w", i+1, err)
		}
	}
	return c, nil
}

// acceptsSession opens and closes one session with addr: the benchmark's clients need more
// than the `ruok` corralproc waits for (the session table on the meta shard must answer).
func acceptsSession(ctx context.Context, addr string) error {
	var last error
	deadline := time.Now().Add(30 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		cl, err := client.Dial(pctx, []string{addr}, client.Options{DialTimeout: 5 * time.Second})
		cancel()
		if err == nil {
			cl.Close() // the session was accepted; how the server answers closeSession is not readiness
			return nil
		}
		last = err
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("no session accepted: %w", last)
		}
		sleepUntil(ctx, time.Now().Add(100*time.Millisecond))
	}
}

// corralCluster is a running corralproc ensemble.
type corralCluster struct {
	e *corralproc.Ensemble
}

func (c *corralCluster) Addrs() []string  { return c.e.Addrs() }
func (c *corralCluster) Kill(i int) error { return c.e.Kill(i) }
func (c *corralCluster) Close() error     { return c.e.Close() }

// Pid is server i's process id, 0 when it is not running (matrix: RSS).
func (c *corralCluster) Pid(i int) int { return c.e.Pid(i) }

// Restart starts the killed server i again from its data directory and waits until every
// running server answers ruok and server i accepts a session.
func (c *corralCluster) Restart(ctx context.Context, i int) error {
	if err := c.e.Start(ctx, i); err != nil {
		return err
	}
	return acceptsSession(ctx, c.e.Addr(i))
}

// Leader returns the server leading the most shards (meta shard included; ties go to
// the lower index), from the admin /shards page of the first running server that answers; if
// none does, the running server whose srvr Mode line says leader.
func (c *corralCluster) Leader(ctx context.Context) int {
	if counts, _, err := c.leadership(ctx); err == nil {
		// Every server counts, running or not: after a kill, the dead server stays "the leader"
		// until the survivors' /shards page shows its shards led by others (failover event 4).
		if i := mostLeading(counts, c.e.Size()); i >= 0 {
			return i
		}
	}
	return c.e.Leader()
}

// Follower returns the running server leading the fewest shards (ties: the lower index) other
// than Leader's choice: killing it stalls as little as possible, like killing a ZooKeeper
// follower. Without /shards, the first running server whose srvr Mode is not leader.
func (c *corralCluster) Follower(ctx context.Context) int {
	running := c.running()
	if counts, _, err := c.leadership(ctx); err == nil {
		leader := mostLeading(counts, len(running))
		if i := fewestLeading(counts, running, leader); i >= 0 {
			return i
		}
	}
	return firstOther(running, c.e.Leader())
}

// Describe says which shards server i leads, by Raft group id as /shards lists them (for the
// failover events and the matrix's notes: a single-session row is forwarded or not by it).
func (c *corralCluster) Describe(ctx context.Context, i int) string {
	ls, err := c.shardLeaders(ctx)
	if err != nil {
		return ""
	}
	return describeLeads(ls, i)
}

// describeLeads says which of the listed shards server i (myid−1) leads.
func describeLeads(ls []corralproc.ShardLeader, i int) string {
	counts, total := leadCounts(ls)
	var led []string
	for _, l := range ls {
		if l.HasLeader && int(l.Leader)-1 == i {
			led = append(led, strconv.FormatUint(l.Shard, 10))
		}
	}
	if len(led) == 0 {
		return fmt.Sprintf("leads 0 of %d shards", total)
	}
	return fmt.Sprintf("leads %d of %d shards (%s)", counts[i], total, strings.Join(led, ", "))
}

func (c *corralCluster) running() []bool {
	r := make([]bool, c.e.Size())
	for i := range r {
		r[i] = c.e.Running(i)
	}
	return r
}

// leadership reads /shards from the first running server that answers and counts the shards
// each server (0-based index = myid−1) leads; total is the number of shards listed.
func (c *corralCluster) leadership(ctx context.Context) (counts map[int]int, total int, err error) {
	ls, err := c.shardLeaders(ctx)
	if err != nil {
		return nil, 0, err
	}
	counts, total = leadCounts(ls)
	return counts, total, nil
}

// shardLeaders reads /shards from the first running server that answers.
func (c *corralCluster) shardLeaders(ctx context.Context) ([]corralproc.ShardLeader, error) {
	err := fmt.Errorf("bench: no corral server running")
	for i := range c.e.Size() {
		if !c.e.Running(i) {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		ls, lerr := c.e.ShardLeaders(rctx, i)
		cancel()
		if lerr != nil {
			err = lerr
			continue
		}
		if len(ls) == 0 {
			err = fmt.Errorf("bench: /shards of server %d listed no shard", i+1)
			continue
		}
		return ls, nil
	}
	return nil, err
}

// leadCounts counts, per server index (myid−1), the shards with a leader that it leads.
func leadCounts(ls []corralproc.ShardLeader) (map[int]int, int) {
	counts := map[int]int{}
	for _, l := range ls {
		if l.HasLeader && l.Leader > 0 {
			counts[int(l.Leader)-1]++
		}
	}
	return counts, len(ls)
}

// mostLeading returns the server of n with the largest count (> 0; ties: the lower index), or
// -1.
func mostLeading(counts map[int]int, n int) int {
	best, bestN := -1, 0
	for i := range n {
		if counts[i] > bestN {
			best, bestN = i, counts[i]
		}
	}
	return best
}

// firstOther returns the first running server other than exclude, or -1.
func firstOther(running []bool, exclude int) int {
	for i, r := range running {
		if r && i != exclude {
			return i
		}
	}
	return -1
}

// fewestLeading returns the running server other than exclude with the smallest count (ties:
// the lower index), or -1.
func fewestLeading(counts map[int]int, running []bool, exclude int) int {
	best := -1
	for i, r := range running {
		if r && i != exclude && (best < 0 || counts[i] < counts[best]) {
			best = i
		}
	}
	return best
}
