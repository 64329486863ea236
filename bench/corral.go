package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral/corral/client"
)

// corralTarget runs Corral servers as child processes of the benchmark: one `corral server
// --config zoo.cfg` per server, each with its own directory holding zoo.cfg, data/myid and
// server.log, on free loopback ports. A server is ready when it answers `ruok` with `imok` and
// accepts a session.
type corralTarget struct {
	bin     string
	tick    time.Duration
	keepDir bool
	dir     string // parent of the ensemble directories (default os.TempDir())
}

func (corralTarget) Name() string  { return "corral" }
func (corralTarget) Sharded() bool { return true }
func (corralTarget) Managed() bool { return true }

// errCorralPortInUse marks a start that lost a port race; Start retries it with fresh ports.
var errCorralPortInUse = errors.New("bench: corral port already in use")

// FindCorralBinary returns the corral binary to run: explicit if set, else this executable when
// it is corral itself (`corral bench ...`), else bin/corral in the current directory or in the
// nearest parent directory holding go.mod (tests run in bench/).
func FindCorralBinary(explicit string) (string, error) {
	if explicit != "" {
		return checkExecutable(explicit)
	}
	if exe, err := os.Executable(); err == nil && filepath.Base(exe) == "corral" {
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

func (t corralTarget) Start(ctx context.Context, s Shape) (Cluster, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		c, err := t.start(ctx, s)
		if err == nil {
			return c, nil
		}
		lastErr = err
		if !errors.Is(err, errCorralPortInUse) || ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

type corralServer struct {
	myid                                      int
	dir                                       string
	clientPort, peerPort, electionPort, admin int
	proc                                      *corralProc
}

type corralProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

type corralCluster struct {
	t       corralTarget
	root    string
	mu      sync.Mutex // guards servers[*].proc
	servers []*corralServer
}

func (t corralTarget) start(ctx context.Context, s Shape) (*corralCluster, error) {
	if s.Servers <= 0 {
		s.Servers = 1
	}
	if s.Shards <= 0 {
		s.Shards = 1
	}
	root, err := os.MkdirTemp(t.dir, "corral-bench-")
	if err != nil {
		return nil, err
	}
	c := &corralCluster{t: t, root: root}
	ports, err := freePorts(4 * s.Servers)
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	for i := 0; i < s.Servers; i++ {
		c.servers = append(c.servers, &corralServer{
			myid: i + 1, dir: filepath.Join(root, "s"+strconv.Itoa(i+1)),
			clientPort: ports[4*i], peerPort: ports[4*i+1], electionPort: ports[4*i+2], admin: ports[4*i+3],
		})
	}
	for _, sv := range c.servers {
		if err := c.writeConfig(sv, s); err != nil {
			c.Close()
			return nil, err
		}
	}
	c.mu.Lock()
	for _, sv := range c.servers {
		if err := c.launchLocked(sv); err != nil {
			c.mu.Unlock()
			c.Close()
			return nil, err
		}
	}
	c.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for i := range c.servers {
		if err := c.waitReady(wctx, i); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// writeConfig writes zoo.cfg and data/myid for one server, in Apache ZooKeeper's format plus
// Corral's keys.
func (c *corralCluster) writeConfig(sv *corralServer, s Shape) error {
	data := filepath.Join(sv.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(sv.myid)+"\n"), 0o644); err != nil {
		return err
	}
	tick := c.t.tick
	if tick <= 0 {
		tick = 2 * time.Second
	}
	kv := map[string]string{
		"tickTime":               strconv.FormatInt(tick.Milliseconds(), 10),
		"initLimit":              "10",
		"syncLimit":              "5",
		"dataDir":                data,
		"clientPort":             strconv.Itoa(sv.clientPort),
		"clientPortAddress":      "127.0.0.1",
		"admin.serverPort":       strconv.Itoa(sv.admin),
		"4lw.commands.whitelist": "*",
		"corral.shards":          strconv.Itoa(s.Shards),
	}
	for k, v := range baseConfig() {
		kv[k] = v
	}
	if s.ApplyDelay > 0 {
		kv["corral.testing.applyDelay"] = s.ApplyDelay.String()
	}
	for _, o := range c.servers {
		kv["server."+strconv.Itoa(o.myid)] = fmt.Sprintf("127.0.0.1:%d:%d", o.peerPort, o.electionPort)
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# written by corral bench\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, kv[k])
	}
	return os.WriteFile(filepath.Join(sv.dir, "zoo.cfg"), []byte(b.String()), 0o644)
}

func (c *corralCluster) launchLocked(sv *corralServer) error {
	if sv.proc != nil {
		select {
		case <-sv.proc.done:
		default:
			return nil
		}
	}
	out, err := os.OpenFile(filepath.Join(sv.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.t.bin, "server", "--config", filepath.Join(sv.dir, "zoo.cfg"))
	cmd.Dir = sv.dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("bench: starting corral server %d: %w", sv.myid, err)
	}
	p := &corralProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	sv.proc = p
	return nil
}

// waitReady polls server i until it answers ruok with imok and accepts a session; it fails
// early, with the tail of its log, when the process exits.
func (c *corralCluster) waitReady(ctx context.Context, i int) error {
	sv := c.servers[i]
	addr := c.Addrs()[i]
	var last error
	for {
		c.mu.Lock()
		p := sv.proc
		c.mu.Unlock()
		if p == nil {
			return fmt.Errorf("bench: corral server %d is not running", sv.myid)
		}
		select {
		case <-p.done:
			return c.explain(sv, fmt.Errorf("bench: corral server %d exited: %v", sv.myid, p.err))
		default:
		}
		last = probe(ctx, addr)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return c.explain(sv, fmt.Errorf("bench: corral server %d not ready: %w (last: %v)", sv.myid, ctx.Err(), last))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// probe checks one server: ruok → imok, then a session handshake.
func probe(ctx context.Context, addr string) error {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out, err := fourLetterWord(pctx, addr, "ruok")
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) != "imok" {
		return fmt.Errorf("ruok answered %q", out)
	}
	cl, err := client.Dial(pctx, []string{addr}, client.Options{DialTimeout: 2 * time.Second})
	if err != nil {
		return err
	}
	cl.Close() // the session was accepted; how the server answers closeSession is not readiness
	return nil
}

func (c *corralCluster) explain(sv *corralServer, err error) error {
	log, _ := os.ReadFile(filepath.Join(sv.dir, "server.log"))
	if bytes.Contains(log, []byte("address already in use")) {
		err = fmt.Errorf("%w: %w", errCorralPortInUse, err)
	}
	if len(log) > 2000 {
		log = log[len(log)-2000:]
	}
	if len(log) > 0 {
		return fmt.Errorf("%w\n--- tail of %s ---\n%s", err, filepath.Join(sv.dir, "server.log"), log)
	}
	return err
}

func (c *corralCluster) Addrs() []string {
	out := make([]string, len(c.servers))
	for i, sv := range c.servers {
		out[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(sv.clientPort))
	}
	return out
}

func (c *corralCluster) Kill(i int) error {
	c.mu.Lock()
	p := c.servers[i].proc
	c.servers[i].proc = nil
	c.mu.Unlock()
	if p == nil {
		return fmt.Errorf("bench: corral server %d is not running", i+1)
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return nil
}

func (c *corralCluster) Restart(ctx context.Context, i int) error {
	c.mu.Lock()
	err := c.launchLocked(c.servers[i])
	c.mu.Unlock()
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return c.waitReady(wctx, i)
}

// Leader returns the server leading the most shards (meta shard included; ties go to the lower
// index), from the admin port's /shards page of the first server that answers; if none does, it
// falls back to the server whose srvr Mode line says leader.
func (c *corralCluster) Leader(ctx context.Context) int {
	if counts, _, err := c.leadership(ctx); err == nil {
		best, bestN := -1, 0
		for i := range c.servers {
			if n := counts[c.servers[i].myid]; n > bestN {
				best, bestN = i, n
			}
		}
		if best >= 0 {
			return best
		}
	}
	return leaderBySrvr(ctx, c.Addrs())
}

// Describe says how many shards server i leads (for the failover events).
func (c *corralCluster) Describe(ctx context.Context, i int) string {
	counts, total, err := c.leadership(ctx)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("leads %d of %d shards", counts[c.servers[i].myid], total)
}

// leadership reads /shards ("shard=N leader=ID term=T has_leader=B" per line) from the first
// running server that answers and counts the shards each replica id (= myid) leads.
func (c *corralCluster) leadership(ctx context.Context) (map[int]int, int, error) {
	var lastErr error = fmt.Errorf("bench: no corral server running")
	for _, sv := range c.servers {
		c.mu.Lock()
		running := sv.proc != nil
		c.mu.Unlock()
		if !running {
			continue
		}
		counts, total, err := fetchShardLeaders(ctx, fmt.Sprintf("http://127.0.0.1:%d/shards", sv.admin))
		if err == nil {
			return counts, total, nil
		}
		lastErr = err
	}
	return nil, 0, lastErr
}

func fetchShardLeaders(ctx context.Context, url string) (map[int]int, int, error) {
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("bench: %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, 0, err
	}
	return parseShardLeaders(string(body))
}

// parseShardLeaders counts, per leader id, the lines with has_leader=true.
func parseShardLeaders(text string) (map[int]int, int, error) {
	counts := map[int]int{}
	total := 0
	for _, line := range strings.Split(text, "\n") {
		f := map[string]string{}
		for _, kv := range strings.Fields(line) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				f[k] = v
			}
		}
		if f["shard"] == "" {
			continue
		}
		total++
		if f["has_leader"] != "true" {
			continue
		}
		id, err := strconv.Atoi(f["leader"])
		if err != nil {
			return nil, 0, fmt.Errorf("bench: /shards line %q: %w", line, err)
		}
		counts[id]++
	}
	if total == 0 {
		return nil, 0, fmt.Errorf("bench: /shards listed no shard")
	}
	return counts, total, nil
}

// Close stops every server (SIGTERM, SIGKILL after 10 s) and removes the directories unless
// they are kept.
func (c *corralCluster) Close() error {
	c.mu.Lock()
	procs := make([]*corralProc, 0, len(c.servers))
	for _, sv := range c.servers {
		if sv.proc != nil {
			procs = append(procs, sv.proc)
			sv.proc = nil
		}
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}()
	}
	wg.Wait()
	if c.t.keepDir {
		return nil
	}
	return os.RemoveAll(c.root)
}

// freePorts reserves n distinct loopback ports from the kernel and releases them.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
