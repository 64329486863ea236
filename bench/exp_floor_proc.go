package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lni/dragonboat/v4"

	"github.com/corral/corral/cluster"
)

// The floor with each NodeHost in its own process, as a Corral ensemble runs: the benchmark
// starts the corral binary three times as floor nodes (floorNodeEnv set), each with one
// NodeHost and a Corral server's log store and transport, and asks the leader's or a
// follower's process to run the proposers. Against the in-process lines it shows what
// separate processes cost a Raft round on this machine; against matrix row 1 what a Corral
// server adds on top.

// floorNodeEnv, set in a floor node's environment, is its NodeHost's replica id (1-3);
// floorAddrsEnv the three Raft addresses (comma-separated, by replica id) and floorDirEnv its
// NodeHost directory.
const (
	floorNodeEnv  = "CORRAL_BENCH_FLOOR_NODE"
	floorAddrsEnv = "CORRAL_BENCH_FLOOR_ADDRS"
	floorDirEnv   = "CORRAL_BENCH_FLOOR_DIR"
)

const floorProcStore = "a Corral server's, a process per NodeHost"

// floorNode is one child process of the floor experiment and its command pipe.
type floorNode struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	logs *nodeLog
}

// nodeLog keeps the last 2 KiB a floor node wrote to its stderr.
type nodeLog struct {
	mu  sync.Mutex
	buf []byte
}

func (l *nodeLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if len(l.buf) > 2048 {
		l.buf = append(l.buf[:0], l.buf[len(l.buf)-2048:]...)
	}
	return len(p), nil
}

func (l *nodeLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(string(l.buf))
}

// ask sends one command line and returns the node's one-line answer.
func (f *floorNode) ask(line string, timeout time.Duration) (string, error) {
	if _, err := fmt.Fprintln(f.in, line); err != nil {
		return "", err
	}
	got := make(chan bool, 1)
	go func() { got <- f.out.Scan() }()
	select {
	case ok := <-got:
		if !ok {
			return "", fmt.Errorf("floor node ended (%v): %s", f.out.Err(), f.logs)
		}
		return f.out.Text(), nil
	case <-time.After(timeout):
		return "", fmt.Errorf("floor node: no answer to %q within %v", line, timeout)
	}
}

// floorInProcesses measures the one-proposer lines, 30 proposers on the leader and 30 spread as
// row 2's clients are (floorAll4) with each NodeHost in its own process.
func floorInProcesses(ctx context.Context, e *env, proposers []int) ([]FloorPoint, error) {
	bin, err := FindCorralBinary(e.cfg.CorralBin)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "corral-floor-proc-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var addrs []string
	for range 3 {
		a, err := freeLoopbackAddr()
		if err != nil {
			return nil, err
		}
		addrs = append(addrs, a)
	}
	nodes := make([]*floorNode, 0, 3)
	defer func() {
		for _, n := range nodes {
			n.in.Close() // EOF ends the node
			done := make(chan struct{})
			go func() { n.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				n.cmd.Process.Kill()
				<-done
			}
		}
	}()
	for i := 1; i <= 3; i++ {
		out := filepath.Join(dir, fmt.Sprintf("out%d", i))
		cmd := exec.CommandContext(ctx, bin, "bench", "floor", "--quiet", "--out", out)
		cmd.Env = append(os.Environ(), floorNodeEnv+"="+strconv.Itoa(i), floorAddrsEnv+"="+strings.Join(addrs, ","),
			floorDirEnv+"="+filepath.Join(dir, fmt.Sprint(i)))
		logs := &nodeLog{}
		cmd.Stderr = logs // shown when the node fails (dragonboat's shutdown errors are not)
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		nodes = append(nodes, &floorNode{cmd: cmd, in: in, out: bufio.NewScanner(stdout), logs: logs})
	}
	for i, n := range nodes {
		if a, err := n.ask("ready", 60*time.Second); err != nil || a != "ready" {
			return nil, fmt.Errorf("floor node %d: %q, %v", i+1, a, err)
		}
	}
	a, err := nodes[0].ask("leader", 10*time.Second)
	if err != nil {
		return nil, err
	}
	lid, err := strconv.Atoi(a)
	if err != nil || lid < 1 || lid > 3 {
		return nil, fmt.Errorf("floor node 1: leader %q", a)
	}
	var pts []FloorPoint
	for _, from := range []string{floorLeader, floorFollower} {
		for _, n := range proposers {
			if from == floorFollower && n != 1 {
				continue
			}
			node := nodes[lid-1]
			if from == floorFollower {
				node = nodes[lid%3]
			}
			e.prog.Stage("floor, %s: %d proposer(s) on %s", floorProcStore, n, from)
			ans, err := node.ask(fmt.Sprintf("measure %d %d %d %d", n, e.cfg.DataSize, e.cfg.Warmup.Milliseconds(), e.cfg.Duration.Milliseconds()),
				e.cfg.Warmup+e.cfg.Duration+30*time.Second)
			if err != nil {
				return nil, err
			}
			var p FloorPoint
			if err := json.Unmarshal([]byte(ans), &p); err != nil {
				return nil, fmt.Errorf("floor node: %q: %w", ans, err)
			}
			p.Store, p.From = floorProcStore, from
			pts = append(pts, p)
		}
	}
	for _, n := range proposers {
		if n < 3 {
			continue
		}
		e.prog.Stage("floor, %s: %d proposers, %s", floorProcStore, n, floorAll4)
		p, err := spreadInProcesses(nodes, n, e.cfg.DataSize, e.cfg.Warmup, e.cfg.Duration)
		if err != nil {
			return nil, err
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// measureArgs reads the four numbers after a "measure" or "spread" command: proposers, entry
// size, warm-up and window in milliseconds.
func measureArgs(f []string, line string) ([4]int, error) {
	var v [4]int
	if len(f) != 5 {
		return v, fmt.Errorf("bench floor node: %q", line)
	}
	for k := range v {
		n, err := strconv.Atoi(f[k+1])
		if err != nil {
			return v, fmt.Errorf("bench floor node: %q", line)
		}
		v[k] = n
	}
	return v, nil
}

// spreadShare is a floor node's answer to "spread": its proposers' figures and latencies.
type spreadShare struct {
	Point FloorPoint `json:"point"`
	Hist  *Hist      `json:"hist"`
}

// spreadInProcesses runs n proposers spread as matrix row 2's clients are (floorAll4) on the
// three floor nodes at once, each node its share, and adds up their figures.
func spreadInProcesses(nodes []*floorNode, n, size int, warmup, window time.Duration) (FloorPoint, error) {
	shares := make([]spreadShare, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for k, node := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ans, err := node.ask(fmt.Sprintf("spread %d %d %d %d", n, size, warmup.Milliseconds(), window.Milliseconds()),
				warmup+window+30*time.Second)
			if err == nil {
				err = json.Unmarshal([]byte(ans), &shares[k])
			}
			if err == nil && shares[k].Hist == nil {
				err = fmt.Errorf("no latencies in %q", ans)
			}
			errs[k] = err
		}()
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			return FloorPoint{}, fmt.Errorf("floor node %d, spread: %w", k+1, err)
		}
	}
	total := NewHist()
	p := shares[0].Point
	p.Proposers, p.Proposals, p.Errors, p.Retries = 0, 0, 0, 0
	for _, sh := range shares {
		total.Merge(sh.Hist)
		p.Proposers += sh.Point.Proposers
		p.Proposals += sh.Point.Proposals
		p.Errors += sh.Point.Errors
		p.Retries += sh.Point.Retries
	}
	p.PerSec = float64(p.Proposals) / window.Seconds()
	p.Latency = total.Summary()
	p.Store, p.From = floorProcStore, floorAll4
	a, err := nodes[0].ask("leaders", 10*time.Second)
	if err != nil {
		return FloorPoint{}, fmt.Errorf("floor node 1, leaders: %w", err)
	}
	for _, f := range strings.Split(a, ",") {
		id, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return FloorPoint{}, fmt.Errorf("floor node 1, leaders: %q", a)
		}
		p.Leaders = append(p.Leaders, id)
	}
	return p, nil
}

// runFloorNode is a floor node's side: one NodeHost with a Corral server's log store and
// transport, answering the commands of its parent on stdin ("ready", "leader", "leaders",
// "measure n size warmupMs windowMs", "spread n size warmupMs windowMs") with one line each on
// stdout until stdin ends.
func runFloorNode(ctx context.Context, id string) error {
	i, err := strconv.ParseUint(id, 10, 64)
	if err != nil || i < 1 || i > 3 {
		return fmt.Errorf("bench floor node: %s=%q", floorNodeEnv, id)
	}
	list := strings.Split(os.Getenv(floorAddrsEnv), ",")
	if len(list) != 3 {
		return fmt.Errorf("bench floor node: %s=%q", floorAddrsEnv, os.Getenv(floorAddrsEnv))
	}
	addrs := map[uint64]string{1: list[0], 2: list[1], 3: list[2]}
	dir := os.Getenv(floorDirEnv)
	cluster.QuietDragonboat()
	x, err := cluster.RaftExpert(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	nh, err := startFloorNode(i, addrs, dir, x)
	if err != nil {
		return err
	}
	defer nh.Close()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		var ans string
		switch f[0] {
		case "ready":
			if err := waitFloorLeaders(nh); err != nil {
				return err
			}
			ans = "ready"
		case "leader":
			lid, _, _, err := nh.GetLeaderID(floorShard)
			if err != nil {
				return err
			}
			ans = strconv.FormatUint(lid, 10)
		case "measure":
			v, err := measureArgs(f, in.Text())
			if err != nil {
				return err
			}
			p, _, err := runProposers(ctx, func(int) (*dragonboat.NodeHost, uint64) { return nh, floorShard }, v[0], v[1],
				time.Duration(v[2])*time.Millisecond, time.Duration(v[3])*time.Millisecond)
			if err != nil {
				return err
			}
			b, err := json.Marshal(p)
			if err != nil {
				return err
			}
			ans = string(b)
		case "spread":
			// spread n size warmupMs windowMs: this node's share of n proposers spread as
			// row 2's clients are, proposer j (of all n) on NodeHost j mod 3 to group j mod
			// floorGroups; this node runs those with j mod 3 = its id - 1.
			v, err := measureArgs(f, in.Text())
			if err != nil {
				return err
			}
			first := int(i) - 1
			mine := (v[0] - first + 2) / 3
			p, h, err := runProposers(ctx, func(k int) (*dragonboat.NodeHost, uint64) {
				return nh, floorShard + uint64((first+3*k)%floorGroups)
			}, mine, v[1], time.Duration(v[2])*time.Millisecond, time.Duration(v[3])*time.Millisecond)
			if err != nil {
				return err
			}
			b, err := json.Marshal(spreadShare{Point: p, Hist: h})
			if err != nil {
				return err
			}
			ans = string(b)
		case "leaders":
			var ids []string
			for shard := uint64(floorShard); shard < floorShard+floorGroups; shard++ {
				lid, _, _, _ := nh.GetLeaderID(shard)
				ids = append(ids, strconv.FormatUint(lid, 10))
			}
			ans = strings.Join(ids, ",")
		default:
			return fmt.Errorf("bench floor node: unknown command %q", in.Text())
		}
		if _, err := fmt.Println(ans); err != nil {
			return err
		}
	}
	return in.Err()
}
