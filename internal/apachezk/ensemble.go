package apachezk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/corral/corral/internal/procutil"
)

// Options configures an ensemble. The zero value is a standalone server with
// ZooKeeper's usual timing.
type Options struct {
	// Servers is the ensemble size; 0 or 1 means one standalone server.
	Servers int
	// TickTime is ZooKeeper's basic time unit (zoo.cfg tickTime); default 2s.
	// Session timeouts are clamped to [2, 20] ticks.
	TickTime time.Duration
	// InitLimit and SyncLimit are in ticks; defaults 10 and 5.
	InitLimit, SyncLimit int
	// Config holds extra zoo.cfg keys. A key that Start writes itself
	// (tickTime, clientPortAddress, 4lw.commands.whitelist, ...) is replaced.
	Config map[string]string
	// ServerConfig holds extra zoo.cfg keys for single servers, by server index (0-based),
	// merged after Config (e.g. a server's own dataDir, which must then hold its myid file).
	ServerConfig map[int]map[string]string
	// JVMFlags are passed to java before the main class, e.g.
	// "-Dzookeeper.extendedTypesEnabled=true" or
	// "-Dzookeeper.DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=".
	JVMFlags []string
	// Heap is the -Xmx value; default "512m".
	Heap string
	// Dir is the parent of the ensemble directory; default os.TempDir().
	Dir string
	// KeepDir keeps the server directories (data, logs) after Close.
	KeepDir bool
	// StartTimeout bounds the wait for a server to serve after it was
	// launched (on top of ctx); default 90s.
	StartTimeout time.Duration
	// ServerUID runs single servers, by index, as another user id (see
	// corralproc.Options.ServerUID). Needs root.
	ServerUID map[int]int
	// ExtraJars are appended to the class path: NettyJars for a secure client port (the
	// Debian jar's manifest lists netty-handler but not the netty-codec it needs).
	ExtraJars []string
}

// NettyJars are the Netty jars NettyServerCnxnFactory needs beyond those zookeeper.jar's
// manifest lists.
var NettyJars = []string{"/usr/share/java/netty-codec.jar", "/usr/share/java/netty-resolver.jar"}

// Handy JVM flags.
const (
	// FlagExtendedTypes enables TTL nodes (createTTL); without it ZooKeeper
	// answers UNIMPLEMENTED.
	FlagExtendedTypes = "-Dzookeeper.extendedTypesEnabled=true"
	// FlagSuperDigest makes "super:test" the super user, as the go-zookeeper
	// and kazoo test harnesses do.
	FlagSuperDigest = "-Dzookeeper.DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU="
	// FlagNoContainerGC pushes the container/TTL reaper interval to an hour,
	// so that time-driven deletions do not make test runs nondeterministic.
	FlagNoContainerGC = "-Dznode.container.checkIntervalMs=3600000"
)

func (o Options) withDefaults() Options {
	if o.Servers <= 0 {
		o.Servers = 1
	}
	if o.TickTime <= 0 {
		o.TickTime = 2 * time.Second
	}
	if o.InitLimit <= 0 {
		o.InitLimit = 10
	}
	if o.SyncLimit <= 0 {
		o.SyncLimit = 5
	}
	if o.Heap == "" {
		o.Heap = "512m"
	}
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 90 * time.Second
	}
	return o
}

// Ensemble is a running set of Apache ZooKeeper servers. Server indexes are
// 0-based; server i has myid i+1. Methods are safe for concurrent use.
type Ensemble struct {
	*procutil.Group // processes, addresses, stop, kill, mode, leader, close

	opts    Options
	java    string
	servers []*server // fixed at start
}

type server struct {
	*procutil.Member       // the Group's, guarded by its lock
	myid                   int
	peerPort, electionPort int
}

// Start launches an ensemble and waits until it serves: every server answers
// `srvr` with a Mode line and there is a leader (or a standalone server). ctx
// bounds the whole start; the servers outlive ctx and are stopped by Close.
func Start(ctx context.Context, opts Options) (*Ensemble, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		e, err := start(ctx, opts)
		if err == nil {
			return e, nil
		}
		lastErr = err
		if !errors.Is(err, errPortInUse) || ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func start(ctx context.Context, opts Options) (*Ensemble, error) {
	java, err := Java()
	if err != nil {
		return nil, err
	}
	g, ports, err := procutil.NewGroupIn(opts.Dir, "apachezk-", opts.KeepDir, ErrNotRunning, opts.Servers, 3)
	if err != nil {
		return nil, fmt.Errorf("apachezk: %w", err)
	}
	e := &Ensemble{Group: g, opts: opts, java: java}
	for i, p := range ports {
		s := &server{
			Member:       &procutil.Member{Dir: filepath.Join(g.Dir(), fmt.Sprintf("zk%d", i+1)), ClientPort: p[0]},
			myid:         i + 1,
			peerPort:     p[1],
			electionPort: p[2],
		}
		e.servers = append(e.servers, s)
		e.Add(s.Member)
	}
	for _, s := range e.servers {
		if err := e.writeConfig(s); err != nil {
			e.Close()
			return nil, err
		}
	}
	if err := e.LaunchAll(func(i int) error { return e.launchLocked(e.servers[i]) }); err != nil {
		e.Close()
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := e.WaitReady(wctx); err != nil {
		err = e.explain(err)
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Ensemble) writeConfig(s *server) error {
	data, err := procutil.DataDir(s.Dir, s.myid)
	if err != nil {
		return fmt.Errorf("apachezk: %w", err)
	}
	kv := [][2]string{
		{"tickTime", strconv.FormatInt(e.opts.TickTime.Milliseconds(), 10)},
		{"initLimit", strconv.Itoa(e.opts.InitLimit)},
		{"syncLimit", strconv.Itoa(e.opts.SyncLimit)},
		{"dataDir", data},
		{"clientPort", strconv.Itoa(s.ClientPort)},
		{"clientPortAddress", "127.0.0.1"},
		{"4lw.commands.whitelist", "*"},
		{"admin.enableServer", "false"},
	}
	if len(e.servers) > 1 {
		for _, o := range e.servers {
			kv = append(kv, [2]string{
				fmt.Sprintf("server.%d", o.myid),
				fmt.Sprintf("127.0.0.1:%d:%d", o.peerPort, o.electionPort),
			})
		}
	}
	kv = procutil.MergeConfig(kv, e.opts.Config)
	kv = procutil.MergeConfig(kv, e.opts.ServerConfig[s.myid-1])
	cfg := procutil.FormatConfig("internal/apachezk", kv)
	if err := os.WriteFile(filepath.Join(s.Dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("apachezk: %w", err)
	}
	log4j := "log4j.rootLogger=INFO, FILE\n" +
		"log4j.appender.FILE=org.apache.log4j.FileAppender\n" +
		"log4j.appender.FILE.File=" + filepath.Join(s.Dir, "zookeeper.log") + "\n" +
		"log4j.appender.FILE.Append=true\n" +
		"log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n" +
		"log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] - %-5p [%t:%C{1}@%L] - %m%n\n"
	if err := os.WriteFile(filepath.Join(s.Dir, "log4j.properties"), []byte(log4j), 0o644); err != nil {
		return fmt.Errorf("apachezk: %w", err)
	}
	return nil
}

// launchLocked starts the JVM of s (inside e.Locked).
func (e *Ensemble) launchLocked(s *server) error {
	if e.ClosedLocked() {
		return fmt.Errorf("apachezk: ensemble closed")
	}
	if s.Proc != nil {
		return nil
	}
	out, err := os.OpenFile(filepath.Join(s.Dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("apachezk: %w", err)
	}
	args := []string{
		"-Xmx" + e.opts.Heap,
		"-Djava.net.preferIPv4Stack=true",
		"-Dlog4j.configuration=file:" + filepath.Join(s.Dir, "log4j.properties"),
		"-Dzookeeper.log.dir=" + s.Dir,
	}
	args = append(args, e.opts.JVMFlags...)
	cp := Classpath(s.Dir)
	for _, j := range e.opts.ExtraJars {
		cp += string(os.PathListSeparator) + j
	}
	args = append(args, "-cp", cp, MainClass, filepath.Join(s.Dir, "zoo.cfg"))
	cmd := exec.Command(e.java, args...)
	cmd.Dir = s.Dir
	if uid, ok := e.opts.ServerUID[s.myid-1]; ok {
		if err := procutil.RunAs(cmd, uid, s.Dir, e.Dir()); err != nil {
			out.Close()
			return fmt.Errorf("apachezk: server %d: %w", s.myid, err)
		}
	}
	p, err := procutil.Start(cmd, out)
	if err != nil {
		return fmt.Errorf("apachezk: starting server %d: %w", s.myid, err)
	}
	s.Proc = p
	return nil
}

// QuorumPorts returns the ports server i listens on for its peers: the quorum port (on the
// leader) and the election port.
func (e *Ensemble) QuorumPorts(i int) []int {
	return []int{e.servers[i].peerPort, e.servers[i].electionPort}
}

// Restart stops server i if it runs (SIGTERM), starts it again with the same
// configuration and data, and waits until the ensemble serves again.
func (e *Ensemble) Restart(ctx context.Context, i int) error {
	if err := e.StopIfRunning(i); err != nil {
		return err
	}
	return e.Start(ctx, i)
}

// Start starts the stopped server i and waits until the ensemble serves.
func (e *Ensemble) Start(ctx context.Context, i int) error {
	var err error
	e.Locked(func() {
		s := e.servers[i]
		if s.Proc != nil && s.Proc.Exited() {
			s.Proc = nil // crashed on its own; reap and relaunch
		}
		err = e.launchLocked(s)
	})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, e.opts.StartTimeout)
	defer cancel()
	if err := e.WaitReady(wctx); err != nil {
		return e.explain(err)
	}
	return nil
}

// WaitReady polls until every running server answers `srvr` with a Mode line
// and one of them is leader or standalone. It fails early when a server
// process has exited. A stopped ensemble server (after Kill/Stop) is not
// waited for.
func (e *Ensemble) WaitReady(ctx context.Context) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		ready, err := e.ready(ctx)
		if ready {
			return nil
		}
		if errors.Is(err, errExited) {
			return err
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr == nil {
				lastErr = ctx.Err()
			}
			return fmt.Errorf("%w: %v", ErrNotReady, lastErr)
		case <-tick.C:
		}
	}
}

var errExited = errors.New("apachezk: server process exited")

func (e *Ensemble) ready(ctx context.Context) (bool, error) {
	haveLeader, running := false, 0
	for i, p := range e.Procs() {
		if p == nil {
			continue
		}
		if p.Exited() {
			return false, fmt.Errorf("%w: server %d (myid %d): %v", errExited, i, i+1, p.Err())
		}
		running++
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		m, err := e.Mode(qctx, i)
		cancel()
		if err != nil {
			return false, fmt.Errorf("server %d: %w", i, err)
		}
		switch m {
		case "leader", "standalone":
			haveLeader = true
		case "follower", "observer":
		default:
			return false, fmt.Errorf("server %d: mode %q", i, m)
		}
	}
	if running == 0 {
		return false, fmt.Errorf("%w: no server running", ErrNotRunning)
	}
	if !haveLeader {
		return false, errors.New("no leader yet")
	}
	return true, nil
}

// explain decorates a start failure with the tails of the server logs and
// marks port collisions as retryable.
func (e *Ensemble) explain(err error) error {
	var b strings.Builder
	portInUse := false
	for _, s := range e.servers {
		for _, name := range []string{"zookeeper.log", "stdout.log"} {
			data, rerr := os.ReadFile(filepath.Join(s.Dir, name))
			if rerr != nil || len(data) == 0 {
				continue
			}
			if bytes.Contains(data, []byte("Address already in use")) {
				portInUse = true
			}
			fmt.Fprintf(&b, "\n--- server %d %s (tail) ---\n%s", s.myid, name, procutil.Tail(data, 15))
		}
	}
	if portInUse {
		return fmt.Errorf("%w: %w%s", errPortInUse, err, b.String())
	}
	return fmt.Errorf("%w%s", err, b.String())
}

// FourLetterWord sends a four-letter command (srvr, ruok, mntr, stat, ...)
// to addr and returns the full text reply. ZooKeeper closes the connection
// after answering.
func FourLetterWord(ctx context.Context, addr, cmd string) (string, error) {
	return procutil.FourLetterWord(ctx, addr, cmd)
}
