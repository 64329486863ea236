package corralproc

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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/corral/corral/internal/procutil"
	"github.com/corral/corral/internal/testknobs"
)

// Options configures an ensemble. The zero value is one server with Corral's
// default shard count and ZooKeeper's usual timing.
type Options struct {
	// Servers is the ensemble size; 0 means 1.
	Servers int
	// Shards is corral.shards; 0 leaves the key out (Corral's default).
	Shards int
	// TickTime is zoo.cfg tickTime; default 2s. Session timeouts are clamped
	// to [2, 20] ticks, as by ZooKeeper.
	TickTime time.Duration
	// Config holds extra zoo.cfg keys. A key that Start writes itself
	// (tickTime, 4lw.commands.whitelist, corral.shards, ...) is replaced;
	// do not replace the port keys (clientPort, admin.serverPort, server.N),
	// which the Ensemble's addresses are derived from.
	Config map[string]string
	// ServerConfig holds extra zoo.cfg keys for single servers, by server
	// index (0-based), applied after Config (so a key here wins over the
	// same key there). It is for keys that differ between servers, such as
	// peerType; the same rules as for Config apply.
	ServerConfig map[int]map[string]string
	// Knobs are test knobs (package internal/testknobs) for every server;
	// ServerKnobs[i] replaces them for server i. A server gets them as
	// environment variables, which only a binary built with -tags
	// corraltesting reads: when any are set, the default binary is
	// [TestingBinary], and a Binary given here must be such a build (Start
	// checks its `corral version`).
	Knobs       testknobs.Knobs
	ServerKnobs map[int]testknobs.Knobs
	// Binary is the corral executable; empty means [Binary] (build
	// ./cmd/corral once per process), or [TestingBinary] with knobs.
	Binary string
	// LogLevel is passed as `corral server --log-level`; default "info".
	LogLevel string
	// Dir is the parent of the ensemble directory; default os.TempDir().
	Dir string
	// KeepDir keeps the server directories (zoo.cfg, data, server.log) after
	// Close; Close then stops servers with SIGTERM instead of SIGKILL.
	KeepDir bool
	// StartTimeout bounds the wait for the servers to serve after they were
	// launched (on top of ctx); default 60s.
	StartTimeout time.Duration
	// ServerUID runs single servers, by index, as another user id (and the same
	// group id), so that a fault test can tell their packets apart with
	// iptables' owner match (internal/nemesis). That user gets the server's
	// directory; the ensemble and binary directories are made traversable.
	// Needs root.
	ServerUID map[int]int
}

func (o Options) withDefaults() Options {
	if o.Servers <= 0 {
		o.Servers = 1
	}
	if o.TickTime <= 0 {
		o.TickTime = 2 * time.Second
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	return o
}

// hasKnobs reports whether any server gets test knobs.
func (o Options) hasKnobs() bool {
	if !o.Knobs.IsZero() {
		return true
	}
	for _, k := range o.ServerKnobs {
		if !k.IsZero() {
			return true
		}
	}
	return false
}

// knobs returns server i's test knobs.
func (o Options) knobs(i int) testknobs.Knobs {
	if k, ok := o.ServerKnobs[i]; ok {
		return k
	}
	return o.Knobs
}

// CheckTestingBinary returns an error unless bin is a corral binary built with -tags
// corraltesting, the only kind that reads test knobs (it says so in `corral version`).
func CheckTestingBinary(ctx context.Context, bin string) error {
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return fmt.Errorf("corralproc: %s version: %w", bin, err)
	}
	if !bytes.Contains(out, []byte("-tags "+testknobs.Tag)) {
		return fmt.Errorf("corralproc: test knobs need a corral binary built with -tags %s (`make build-testing` writes bin/corral-testing); %s is a production build", testknobs.Tag, bin)
	}
	return nil
}

// Sentinel errors.
var (
	// ErrNotRunning is returned for operations on a server that is stopped.
	ErrNotRunning = errors.New("corralproc: server is not running")
	// ErrNotReady is returned when a server did not serve in time.
	ErrNotReady = errors.New("corralproc: ensemble not ready")
	// ErrExited is returned when a server process exited while it was
	// expected to start serving.
	ErrExited = errors.New("corralproc: server process exited")
	// ErrPortInUse marks a start that failed because a port was taken
	// between allocation and bind. Start and Ensemble.Start retry it with
	// fresh ports; it reaches the caller only when the retries ran out.
	ErrPortInUse = errors.New("corralproc: port already in use")
)

// LogName is the file in each server directory that receives the server's
// stdout and stderr.
const LogName = "server.log"

// Ensemble is a running set of Corral server processes. Server indexes are
// 0-based; server i has myid i+1. Methods are safe for concurrent use.
type Ensemble struct {
	*procutil.Group // processes, client addresses, stop, kill, mode, leader, close

	opts    Options // ServerConfig grows with AddObserver (Group's lock)
	bin     string
	servers []*server // Group's lock (AddObserver appends)
}

type server struct {
	*procutil.Member                  // the Group's; these fields too are guarded by its lock
	myid                              int
	peerPort, electionPort, adminPort int
	logStart                          int64  // size of server.log when Proc was launched
	bin                               string // the executable, when not the ensemble's (SetBinary)
}

// server returns server i (its fields under the Group's lock).
func (e *Ensemble) server(i int) (s *server) {
	e.Locked(func() { s = e.servers[i] })
	return s
}

// Start launches an ensemble and waits until every server answers `ruok`
// with `imok`. ctx bounds the whole start (including a build of the binary);
// the servers outlive ctx and are stopped by Close. A start that lost a port
// race is retried with fresh ports.
func Start(ctx context.Context, opts Options) (*Ensemble, error) {
	opts = opts.withDefaults()
	bin := opts.Binary
	switch {
	case bin == "" && opts.hasKnobs():
		var err error
		if bin, err = TestingBinary(ctx); err != nil {
			return nil, err
		}
	case bin == "":
		var err error
		if bin, err = Binary(ctx); err != nil {
			return nil, err
		}
	default:
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("corralproc: binary: %w", err)
		}
		if opts.hasKnobs() {
			if err := CheckTestingBinary(ctx, bin); err != nil {
				return nil, err
			}
		}
	}
	var lastErr error
	for attempt := 0; attempt < 4; attempt++ {
		e, err := start(ctx, opts, bin)
		if err == nil {
			return e, nil
		}
		lastErr = err
		if !errors.Is(err, ErrPortInUse) || ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func start(ctx context.Context, opts Options, bin string) (*Ensemble, error) {
	g, ports, err := procutil.NewGroupIn(opts.Dir, "corralproc-", opts.KeepDir, ErrNotRunning, opts.Servers, 4)
	if err != nil {
		return nil, fmt.Errorf("corralproc: %w", err)
	}
	e := &Ensemble{Group: g, opts: opts, bin: bin}
	for i, p := range ports {
		s := &server{
			Member:       &procutil.Member{Dir: filepath.Join(g.Dir(), "s"+strconv.Itoa(i+1)), ClientPort: p[0]},
			myid:         i + 1,
			peerPort:     p[1],
			electionPort: p[2],
			adminPort:    p[3],
		}
		e.servers = append(e.servers, s)
		e.Add(s.Member)
	}
	// All servers start before any is waited for: a Corral server opens its client port only
	// when its shards have leaders, which needs a quorum.
	err = e.LaunchAll(func(i int) error {
		if err := e.writeConfigLocked(e.servers[i]); err != nil {
			return err
		}
		return e.launchLocked(e.servers[i])
	})
	if err != nil {
		e.Close()
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := e.WaitReady(wctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// writeConfigLocked writes s's zoo.cfg and data/myid (inside e.Locked).
func (e *Ensemble) writeConfigLocked(s *server) error {
	data, err := procutil.DataDir(s.Dir, s.myid)
	if err != nil {
		return fmt.Errorf("corralproc: %w", err)
	}
	kv := [][2]string{
		{"tickTime", strconv.FormatInt(e.opts.TickTime.Milliseconds(), 10)},
		{"initLimit", "10"},
		{"syncLimit", "5"},
		{"dataDir", data},
		{"clientPort", strconv.Itoa(s.ClientPort)},
		{"clientPortAddress", "127.0.0.1"},
		{"admin.serverAddress", "127.0.0.1"},
		{"admin.serverPort", strconv.Itoa(s.adminPort)},
		{"4lw.commands.whitelist", "*"},
	}
	if e.opts.Shards > 0 {
		kv = append(kv, [2]string{"corral.shards", strconv.Itoa(e.opts.Shards)})
	}
	// A server.N line even for a single server: it fixes the Raft port,
	// which a standalone server would otherwise derive from clientPort.
	for _, o := range e.servers {
		kv = append(kv, [2]string{
			"server." + strconv.Itoa(o.myid),
			fmt.Sprintf("127.0.0.1:%d:%d", o.peerPort, o.electionPort),
		})
	}
	kv = procutil.MergeConfig(kv, e.opts.Config)
	kv = procutil.MergeConfig(kv, e.opts.ServerConfig[s.myid-1])
	cfg := procutil.FormatConfig("internal/corralproc", kv)
	if err := os.WriteFile(e.configPath(s), []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("corralproc: %w", err)
	}
	return nil
}

func (e *Ensemble) configPath(s *server) string { return filepath.Join(s.Dir, "zoo.cfg") }

// launchLocked starts the process of s (inside e.Locked).
func (e *Ensemble) launchLocked(s *server) error {
	if e.ClosedLocked() {
		return errors.New("corralproc: ensemble closed")
	}
	if s.Proc != nil {
		return nil
	}
	logPath := filepath.Join(s.Dir, LogName)
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("corralproc: %w", err)
	}
	if st, err := out.Stat(); err == nil {
		s.logStart = st.Size()
	}
	bin := e.bin
	if s.bin != "" {
		bin = s.bin
	}
	cmd := exec.Command(bin, "server", "--config", e.configPath(s), "--log-level", e.opts.LogLevel)
	cmd.Dir = s.Dir
	cmd.Env = serverEnv(os.Environ(), e.opts.knobs(s.myid-1))
	if uid, ok := e.opts.ServerUID[s.myid-1]; ok {
		if err := procutil.RunAs(cmd, uid, s.Dir, e.Dir(), filepath.Dir(bin)); err != nil {
			out.Close()
			return fmt.Errorf("corralproc: server %d: %w", s.myid, err)
		}
	}
	p, err := procutil.Start(cmd, out)
	if err != nil {
		return fmt.Errorf("corralproc: starting server %d: %w", s.myid, err)
	}
	s.Proc = p
	return nil
}

// serverEnv is environ without test knobs of its own (a test run with them set passes none on
// by accident) plus k's.
func serverEnv(environ []string, k testknobs.Knobs) []string {
	env := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == testknobs.ApplyDelayEnv || name == testknobs.ApplyLagEnv
	})
	return append(env, k.Environ()...)
}

// QuorumPorts returns the ports server i listens on for its peers: its Raft port (the
// election port of server.N is accepted and unused).
func (e *Ensemble) QuorumPorts(i int) []int { return []int{e.server(i).peerPort} }

// ConfigPath is server i's zoo.cfg.
func (e *Ensemble) ConfigPath(i int) string { return e.configPath(e.server(i)) }

// LogPath is server i's log (its stdout and stderr, appended across restarts).
func (e *Ensemble) LogPath(i int) string { return filepath.Join(e.ServerDir(i), LogName) }

// SetBinary makes server i run the executable at path from its next start on (an upgrade or a
// downgrade of that server); a running process is not touched.
func (e *Ensemble) SetBinary(i int, path string) {
	e.Locked(func() { e.servers[i].bin = path })
}

// Binary is the corral executable the ensemble runs (servers given another one with SetBinary
// excepted).
func (e *Ensemble) Binary() string { return e.bin }

// AdminAddr is server i's admin HTTP address (/metrics, /health, /shards). It changes, as
// Addr does, only if a restart of server i had to move it to a fresh port.
func (e *Ensemble) AdminAddr(i int) string {
	var p int
	e.Locked(func() { p = e.servers[i].adminPort })
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
}

// Restart stops server i if it runs (SIGTERM), starts it again with the same
// configuration and data, and waits until every running server serves.
func (e *Ensemble) Restart(ctx context.Context, i int) error {
	if err := e.StopIfRunning(i); err != nil {
		return err
	}
	return e.Start(ctx, i)
}

// Start starts the stopped server i and waits until every running server
// serves. If server i loses a port race, it is relaunched with fresh client
// and admin ports (see Addr).
func (e *Ensemble) Start(ctx context.Context, i int) error {
	wctx, cancel := context.WithTimeout(ctx, e.opts.StartTimeout)
	defer cancel()
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		if err = e.launch(i, attempt > 0); err != nil {
			return err
		}
		err = e.WaitReady(wctx)
		if err == nil || !errors.Is(err, ErrPortInUse) || wctx.Err() != nil {
			return err
		}
		if !e.portInUse(i) {
			return err // another server's trouble: not ours to fix
		}
		_ = e.Kill(i)
	}
	return err
}

// launch starts server i, first moving it to fresh client and admin ports if
// newPorts.
func (e *Ensemble) launch(i int, newPorts bool) error {
	var ports []int
	if newPorts {
		var err error
		if ports, err = procutil.FreePorts(2); err != nil {
			return err
		}
	}
	var err error
	e.Locked(func() {
		s := e.servers[i]
		if s.Proc != nil && s.Proc.Exited() {
			s.Proc = nil // exited on its own; reaped, relaunch
		}
		if newPorts {
			s.ClientPort, s.adminPort = ports[0], ports[1]
			if err = e.writeConfigLocked(s); err != nil {
				return
			}
		}
		err = e.launchLocked(s)
	})
	return err
}

// WaitReady polls until every running server answers `ruok` with `imok`. It
// fails early, with the tail of the server's log, when a server process
// exits or its log reports a port collision (ErrPortInUse). Stopped servers
// are not waited for.
func (e *Ensemble) WaitReady(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		notReady, err := e.ready(ctx)
		if notReady < 0 {
			return nil
		}
		if errors.Is(err, ErrExited) || errors.Is(err, ErrPortInUse) || errors.Is(err, ErrNotRunning) {
			return e.explain(err, notReady)
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return e.explain(fmt.Errorf("%w: server %d (myid %d): %v", ErrNotReady, notReady, notReady+1, err), notReady)
		case <-tick.C:
		}
	}
}

// ready returns -1 if every running server serves, else the index of the
// first one that does not and why.
func (e *Ensemble) ready(ctx context.Context) (int, error) {
	running := 0
	for i, p := range e.Procs() {
		if p == nil {
			continue
		}
		running++
		if p.Exited() {
			if e.portInUse(i) {
				return i, fmt.Errorf("%w: server %d (myid %d) exited: %v", ErrPortInUse, i, i+1, p.Err())
			}
			return i, fmt.Errorf("%w: server %d (myid %d): %v", ErrExited, i, i+1, p.Err())
		}
		if e.portInUse(i) {
			// The admin port failing leaves the process running.
			return i, fmt.Errorf("%w: server %d (myid %d)", ErrPortInUse, i, i+1)
		}
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		out, err := FourLetterWord(qctx, e.Addr(i), "ruok")
		cancel()
		if err != nil {
			return i, err
		}
		if out != "imok" && out != "ruok is not executed because it is not in the whitelist.\n" {
			return i, fmt.Errorf("ruok answered %q", out)
		}
	}
	if running == 0 {
		return 0, fmt.Errorf("%w: no server running", ErrNotRunning)
	}
	return -1, nil
}

// portInUse reports whether server i's log, since its last launch, reports a
// bind failure.
func (e *Ensemble) portInUse(i int) bool {
	var dir string
	var from int64
	e.Locked(func() { dir, from = e.servers[i].Dir, e.servers[i].logStart })
	data := readFrom(filepath.Join(dir, LogName), from)
	return bytes.Contains(bytes.ToLower(data), []byte("address already in use"))
}

func readFrom(path string, off int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil
	}
	data, _ := io.ReadAll(f)
	return data
}

// explain adds the tail of server i's log since its last launch (and, if
// that is empty, of the whole log) to err.
func (e *Ensemble) explain(err error, i int) error {
	if i < 0 || i >= e.Size() {
		return err
	}
	var dir string
	var from int64
	e.Locked(func() { dir, from = e.servers[i].Dir, e.servers[i].logStart })
	path := filepath.Join(dir, LogName)
	data := readFrom(path, from)
	if len(bytes.TrimSpace(data)) == 0 {
		data = readFrom(path, 0)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("%w (%s is empty)", err, path)
	}
	return fmt.Errorf("%w\n%s", err, logExcerpt(path, data))
}

// logExcerpt returns the last 25 lines of a server's log, or, when the process died with a Go
// stack dump, the 25 lines before the dump (the panic's message among them) and the dump's
// first 12 lines: the dump alone would fill the tail with frames and hide why it panicked.
func logExcerpt(path string, data []byte) string {
	i := bytes.Index(data, []byte("\ngoroutine "))
	if i < 0 {
		return fmt.Sprintf("--- tail of %s ---\n%s", path, Tail(data, 25))
	}
	dump := strings.SplitN(string(data[i+1:]), "\n", 13)
	return fmt.Sprintf("--- %s, before its stack dump ---\n%s\n--- the dump's first lines ---\n%s",
		path, Tail(data[:i], 25), strings.Join(dump[:min(len(dump), 12)], "\n"))
}

// Tail returns the last n lines of data.
func Tail(data []byte, n int) string { return procutil.Tail(data, n) }

// FourLetterWord sends a four-letter word (ruok, srvr, mntr, ...) to addr
// and returns the whole reply; the server closes the connection after
// answering.
func FourLetterWord(ctx context.Context, addr, word string) (string, error) {
	return procutil.FourLetterWord(ctx, addr, word)
}

// ShardLeader is one line of a server's admin /shards page: which replica
// (myid) that server believes leads a Raft group.
type ShardLeader struct {
	Shard     uint64 // Raft group id: 1 is the session (meta) shard, 2.. the data shards
	Leader    uint64 // myid of the leader, meaningful if HasLeader
	Term      uint64
	HasLeader bool
}

// adminClient keeps no idle connections: none outlives a call (goleak in
// callers' TestMain), and servers come and go.
var adminClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// ShardLeaders asks server i's admin port (/shards) who leads each Raft
// group, in its view.
func (e *Ensemble) ShardLeaders(ctx context.Context, i int) ([]ShardLeader, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.AdminAddr(i)+"/shards", nil)
	if err != nil {
		return nil, err
	}
	resp, err := adminClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("corralproc: /shards of server %d: %s: %s", i, resp.Status, bytes.TrimSpace(body))
	}
	var out []ShardLeader
	for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		var l ShardLeader
		if _, err := fmt.Sscanf(line, "shard=%d leader=%d term=%d has_leader=%t", &l.Shard, &l.Leader, &l.Term, &l.HasLeader); err != nil {
			return nil, fmt.Errorf("corralproc: /shards of server %d: line %q: %v", i, line, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// WaitLeaders polls until every running server sees a leader for every Raft
// group and that leader is a running server. After a Kill, this is the point
// from which requests no longer go to the dead server's Raft groups.
func (e *Ensemble) WaitLeaders(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := e.leadersSettled(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: leaders: %v", ErrNotReady, err)
		case <-tick.C:
		}
	}
}

func (e *Ensemble) leadersSettled(ctx context.Context) error {
	running := map[uint64]bool{}
	for i := range e.servers {
		if e.Running(i) {
			running[uint64(i+1)] = true
		}
	}
	for i := range e.servers {
		if !running[uint64(i+1)] {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		ls, err := e.ShardLeaders(qctx, i)
		cancel()
		if err != nil {
			return err
		}
		for _, l := range ls {
			if !l.HasLeader || !running[l.Leader] {
				return fmt.Errorf("server %d sees shard %d without a running leader (%+v)", i, l.Shard, l)
			}
		}
	}
	return nil
}
