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
	"sync"
	"syscall"
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
	opts Options
	bin  string
	root string

	mu      sync.Mutex // guards servers[*] (ports, proc, logStart) and closed
	servers []*server
	closed  bool
}

type server struct {
	myid                                          int
	dir                                           string
	clientPort, peerPort, electionPort, adminPort int
	proc                                          *procutil.Process // nil when not running
	logStart                                      int64             // size of server.log when proc was launched
	bin                                           string            // the executable, when not the ensemble's (SetBinary)
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
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("corralproc: %w", err)
	}
	root, err := os.MkdirTemp(opts.Dir, "corralproc-")
	if err != nil {
		return nil, fmt.Errorf("corralproc: %w", err)
	}
	e := &Ensemble{opts: opts, bin: bin, root: root}
	ports, err := freePorts(4 * opts.Servers)
	if err != nil {
		e.removeDir()
		return nil, err
	}
	for i := 0; i < opts.Servers; i++ {
		e.servers = append(e.servers, &server{
			myid:         i + 1,
			dir:          filepath.Join(root, "s"+strconv.Itoa(i+1)),
			clientPort:   ports[4*i],
			peerPort:     ports[4*i+1],
			electionPort: ports[4*i+2],
			adminPort:    ports[4*i+3],
		})
	}
	e.mu.Lock()
	for _, s := range e.servers {
		if err := e.writeConfigLocked(s); err != nil {
			e.mu.Unlock()
			e.Close()
			return nil, err
		}
	}
	// All servers start before any is waited for: a Corral server opens its
	// client port only when its shards have leaders, which needs a quorum.
	for _, s := range e.servers {
		if err := e.launchLocked(s); err != nil {
			e.mu.Unlock()
			e.Close()
			return nil, err
		}
	}
	e.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := e.WaitReady(wctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// freePorts reserves n distinct loopback ports by binding them all at once,
// then releases them for the servers to bind.
func freePorts(n int) ([]int, error) {
	ports, err := procutil.FreePorts(n)
	if err != nil {
		return nil, fmt.Errorf("corralproc: %w", err)
	}
	return ports, nil
}

// writeConfigLocked writes s's zoo.cfg and data/myid. e.mu must be held.
func (e *Ensemble) writeConfigLocked(s *server) error {
	data := filepath.Join(s.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("corralproc: %w", err)
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(s.myid)+"\n"), 0o644); err != nil {
		return fmt.Errorf("corralproc: %w", err)
	}
	kv := [][2]string{
		{"tickTime", strconv.FormatInt(e.opts.TickTime.Milliseconds(), 10)},
		{"initLimit", "10"},
		{"syncLimit", "5"},
		{"dataDir", data},
		{"clientPort", strconv.Itoa(s.clientPort)},
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

func (e *Ensemble) configPath(s *server) string { return filepath.Join(s.dir, "zoo.cfg") }

// launchLocked starts the process of s. e.mu must be held.
func (e *Ensemble) launchLocked(s *server) error {
	if e.closed {
		return errors.New("corralproc: ensemble closed")
	}
	if s.proc != nil {
		return nil
	}
	logPath := filepath.Join(s.dir, LogName)
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
	cmd.Dir = s.dir
	cmd.Env = serverEnv(os.Environ(), e.opts.knobs(s.myid-1))
	if uid, ok := e.opts.ServerUID[s.myid-1]; ok {
		if err := procutil.RunAs(cmd, uid, s.dir, e.root, filepath.Dir(bin)); err != nil {
			out.Close()
			return fmt.Errorf("corralproc: server %d: %w", s.myid, err)
		}
	}
	p, err := procutil.Start(cmd, out)
	if err != nil {
		return fmt.Errorf("corralproc: starting server %d: %w", s.myid, err)
	}
	s.proc = p
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
func (e *Ensemble) QuorumPorts(i int) []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return []int{e.servers[i].peerPort}
}

// Size is the number of servers (AddObserver adds one).
func (e *Ensemble) Size() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.servers)
}

// Dir is the directory of the whole ensemble.
func (e *Ensemble) Dir() string { return e.root }

// ServerDir is server i's directory (zoo.cfg, data/, server.log).
func (e *Ensemble) ServerDir(i int) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.servers[i].dir
}

// ConfigPath is server i's zoo.cfg.
func (e *Ensemble) ConfigPath(i int) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.configPath(e.servers[i])
}

// LogPath is server i's log (its stdout and stderr, appended across restarts).
func (e *Ensemble) LogPath(i int) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return filepath.Join(e.servers[i].dir, LogName)
}

// SetBinary makes server i run the executable at path from its next start on (an upgrade or a
// downgrade of that server); a running process is not touched.
func (e *Ensemble) SetBinary(i int, path string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.servers[i].bin = path
}

// Binary is the corral executable the ensemble runs (servers given another one with SetBinary
// excepted).
func (e *Ensemble) Binary() string { return e.bin }

// Addr is server i's client address, "127.0.0.1:port". It changes only if a
// restart of server i had to move it to a fresh port.
func (e *Ensemble) Addr(i int) string {
	e.mu.Lock()
	p := e.servers[i].clientPort
	e.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
}

// AdminAddr is server i's admin HTTP address (/metrics, /health, /shards).
func (e *Ensemble) AdminAddr(i int) string {
	e.mu.Lock()
	p := e.servers[i].adminPort
	e.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
}

// Addrs lists the client addresses of all servers, running or not.
func (e *Ensemble) Addrs() []string {
	a := make([]string, len(e.servers))
	for i := range e.servers {
		a[i] = e.Addr(i)
	}
	return a
}

// ConnectString is the comma-separated client address list.
func (e *Ensemble) ConnectString() string { return strings.Join(e.Addrs(), ",") }

// Running reports whether server i's process is running.
func (e *Ensemble) Running(i int) bool {
	e.mu.Lock()
	p := e.servers[i].proc
	e.mu.Unlock()
	return p != nil && !p.Exited()
}

// Pid is the process id of server i, or 0 when it is not running.
func (e *Ensemble) Pid(i int) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.servers[i].proc; p != nil {
		return p.Pid()
	}
	return 0
}

// Kill sends SIGKILL to server i and waits for the process to exit.
func (e *Ensemble) Kill(i int) error {
	return e.stop(i, syscall.SIGKILL, 0)
}

// Stop sends SIGTERM to server i and waits for it to exit (SIGKILL after
// 15s).
func (e *Ensemble) Stop(i int) error {
	return e.stop(i, syscall.SIGTERM, procutil.StopGrace)
}

func (e *Ensemble) stop(i int, sig syscall.Signal, grace time.Duration) error {
	e.mu.Lock()
	s := e.servers[i]
	p := s.proc
	s.proc = nil
	e.mu.Unlock()
	if p == nil {
		return fmt.Errorf("%w: server %d", ErrNotRunning, i)
	}
	p.Terminate(sig, grace)
	return nil
}

// Restart stops server i if it runs (SIGTERM), starts it again with the same
// configuration and data, and waits until every running server serves.
func (e *Ensemble) Restart(ctx context.Context, i int) error {
	if e.Running(i) {
		if err := e.Stop(i); err != nil && !errors.Is(err, ErrNotRunning) {
			return err
		}
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
		if ports, err = freePorts(2); err != nil {
			return err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.servers[i]
	if s.proc != nil && s.proc.Exited() {
		s.proc = nil // exited on its own; reaped, relaunch
	}
	if newPorts {
		s.clientPort, s.adminPort = ports[0], ports[1]
		if err := e.writeConfigLocked(s); err != nil {
			return err
		}
	}
	return e.launchLocked(s)
}

// Mode asks server i for its role with `srvr`: "standalone", "leader" (it
// leads the session shard), "follower", or an error.
func (e *Ensemble) Mode(ctx context.Context, i int) (string, error) {
	out, err := FourLetterWord(ctx, e.Addr(i), "srvr")
	if err != nil {
		return "", err
	}
	if m, ok := procutil.ParseMode(out); ok {
		return m, nil
	}
	return "", fmt.Errorf("corralproc: no Mode in srvr reply %q", strings.TrimSpace(out))
}

// Leader returns the index of the running server whose `srvr` Mode is leader
// or standalone, or -1 (asks each server with a 2s timeout).
func (e *Ensemble) Leader() int {
	for i := range e.servers {
		if !e.Running(i) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		m, err := e.Mode(ctx, i)
		cancel()
		if err == nil && (m == "leader" || m == "standalone") {
			return i
		}
	}
	return -1
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
	e.mu.Lock()
	procs := make([]*procutil.Process, len(e.servers))
	for i, s := range e.servers {
		procs[i] = s.proc
	}
	e.mu.Unlock()
	running := 0
	for i, p := range procs {
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
	e.mu.Lock()
	s := e.servers[i]
	from := s.logStart
	e.mu.Unlock()
	data := readFrom(filepath.Join(s.dir, LogName), from)
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
	if i < 0 || i >= len(e.servers) {
		return err
	}
	e.mu.Lock()
	s := e.servers[i]
	from := s.logStart
	e.mu.Unlock()
	path := filepath.Join(s.dir, LogName)
	data := readFrom(path, from)
	if len(bytes.TrimSpace(data)) == 0 {
		data = readFrom(path, 0)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("%w (%s is empty)", err, path)
	}
	return fmt.Errorf("%w\n--- tail of %s ---\n%s", err, path, Tail(data, 25))
}

// Tail returns the last n lines of data.
func Tail(data []byte, n int) string { return procutil.Tail(data, n) }

// Close stops every server (SIGKILL; SIGTERM with KeepDir so that the
// servers shut down cleanly), waits for the processes, and removes the
// ensemble directory unless KeepDir. It is idempotent.
func (e *Ensemble) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	var procs []*procutil.Process
	for _, s := range e.servers {
		if s.proc != nil {
			procs = append(procs, s.proc)
			s.proc = nil
		}
	}
	e.mu.Unlock()
	sig, grace := procutil.CloseSignal(e.opts.KeepDir)
	procutil.TerminateAll(procs, sig, grace)
	if !e.opts.KeepDir {
		return e.removeDir()
	}
	return nil
}

func (e *Ensemble) removeDir() error {
	if err := os.RemoveAll(e.root); err != nil {
		return fmt.Errorf("corralproc: %w", err)
	}
	return nil
}

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
