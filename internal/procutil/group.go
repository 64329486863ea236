package procutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Group is the core both test harnesses build their Ensemble on: the ensemble's directory and
// its servers' processes, client ports and directories, with what is the same for Apache
// ZooKeeper and Corral — addresses, running state, stop and kill, the `srvr` mode and the
// leader, and Close. What differs (the configuration, the command line, readiness) stays in
// the harness, which holds its own per-server state next to the Member.
//
// Server indexes are 0-based. Members' fields are guarded by the group's lock: read and
// change them inside Locked. Methods are safe for concurrent use.
type Group struct {
	root       string
	keepDir    bool
	notRunning error // the harness's error for a server that is not running

	mu      sync.Mutex
	members []*Member
	closed  bool
}

// Member is one server of a Group.
type Member struct {
	Dir        string   // the server's directory
	ClientPort int      // on 127.0.0.1; a harness may move it on a restart
	Proc       *Process // nil when not running
}

// NewGroup returns an empty group for the ensemble directory root. With keepDir, Close leaves
// root in place and stops the servers with SIGTERM so that they flush their logs. notRunning
// is what Stop and Kill wrap for a server that does not run.
func NewGroup(root string, keepDir bool, notRunning error) *Group {
	return &Group{root: root, keepDir: keepDir, notRunning: notRunning}
}

// NewGroupIn creates the ensemble directory (a new directory prefix* in parent) and reserves
// perServer loopback ports for each of n servers: ports[i] are server i's. The group has no
// members yet.
func NewGroupIn(parent, prefix string, keepDir bool, notRunning error, n, perServer int) (*Group, [][]int, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, nil, err
	}
	root, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return nil, nil, err
	}
	flat, err := FreePorts(n * perServer)
	if err != nil {
		os.RemoveAll(root)
		return nil, nil, err
	}
	ports := make([][]int, n)
	for i := range ports {
		ports[i] = flat[i*perServer : (i+1)*perServer]
	}
	return NewGroup(root, keepDir, notRunning), ports, nil
}

// Add appends a member (server index Size()-1).
func (g *Group) Add(m *Member) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.AddLocked(m)
}

// AddLocked is Add inside Locked.
func (g *Group) AddLocked(m *Member) { g.members = append(g.members, m) }

// Locked runs f under the group's lock (for reading or changing Members' fields).
func (g *Group) Locked(f func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f()
}

// LaunchAll calls launch for every server in index order under the group's lock and returns
// the first error (the servers started so far keep running; Close stops them).
func (g *Group) LaunchAll(launch func(i int) error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range g.members {
		if err := launch(i); err != nil {
			return err
		}
	}
	return nil
}

// ClosedLocked reports whether Close ran (the lock held, inside Locked).
func (g *Group) ClosedLocked() bool { return g.closed }

// Size is the number of servers.
func (g *Group) Size() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.members)
}

// Dir is the directory of the whole ensemble.
func (g *Group) Dir() string { return g.root }

// ServerDir is server i's directory.
func (g *Group) ServerDir(i int) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.members[i].Dir
}

// Addr is server i's client address, "127.0.0.1:port".
func (g *Group) Addr(i int) string {
	g.mu.Lock()
	p := g.members[i].ClientPort
	g.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
}

// Addrs lists the client addresses of all servers, running or not.
func (g *Group) Addrs() []string {
	a := make([]string, g.Size())
	for i := range a {
		a[i] = g.Addr(i)
	}
	return a
}

// ConnectString is the comma-separated client address list.
func (g *Group) ConnectString() string { return strings.Join(g.Addrs(), ",") }

// Running reports whether server i's process is running.
func (g *Group) Running(i int) bool {
	g.mu.Lock()
	p := g.members[i].Proc
	g.mu.Unlock()
	return p != nil && !p.Exited()
}

// Pid is server i's process id, 0 when it is not running.
func (g *Group) Pid(i int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.members[i].Proc; p != nil {
		return p.Pid()
	}
	return 0
}

// Procs returns every server's process (nil when not running), in index order.
func (g *Group) Procs() []*Process {
	g.mu.Lock()
	defer g.mu.Unlock()
	procs := make([]*Process, len(g.members))
	for i, m := range g.members {
		procs[i] = m.Proc
	}
	return procs
}

// Kill sends SIGKILL to server i and waits for the process to exit.
func (g *Group) Kill(i int) error { return g.terminate(i, syscall.SIGKILL, 0) }

// Stop sends SIGTERM to server i and waits for it to exit (SIGKILL after StopGrace).
func (g *Group) Stop(i int) error { return g.terminate(i, syscall.SIGTERM, StopGrace) }

func (g *Group) terminate(i int, sig syscall.Signal, grace time.Duration) error {
	g.mu.Lock()
	m := g.members[i]
	p := m.Proc
	m.Proc = nil
	g.mu.Unlock()
	if p == nil {
		return fmt.Errorf("%w: server %d", g.notRunning, i)
	}
	p.Terminate(sig, grace)
	return nil
}

// StopIfRunning stops server i (SIGTERM) if its process runs: the first half of a restart.
func (g *Group) StopIfRunning(i int) error {
	if !g.Running(i) {
		return nil
	}
	if err := g.Stop(i); err != nil && !errors.Is(err, g.notRunning) {
		return err
	}
	return nil
}

// Mode asks server i for its role with `srvr`: "standalone", "leader", "follower",
// "observer", or an error (not serving, not running).
func (g *Group) Mode(ctx context.Context, i int) (string, error) {
	out, err := FourLetterWord(ctx, g.Addr(i), "srvr")
	if err != nil {
		return "", err
	}
	if m, ok := ParseMode(out); ok {
		return m, nil
	}
	return "", fmt.Errorf("no Mode in srvr reply %q", strings.TrimSpace(out))
}

// Leader returns the index of the running server whose `srvr` Mode is leader or standalone,
// or -1 (asks each server with a 2s timeout).
func (g *Group) Leader() int {
	for i := range g.Size() {
		if !g.Running(i) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		m, err := g.Mode(ctx, i)
		cancel()
		if err == nil && (m == "leader" || m == "standalone") {
			return i
		}
	}
	return -1
}

// Close stops every server (SIGKILL; SIGTERM with keepDir so that the servers shut down
// cleanly), waits for the processes, and removes the ensemble directory unless keepDir. It is
// idempotent.
func (g *Group) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	var procs []*Process
	for _, m := range g.members {
		if m.Proc != nil {
			procs = append(procs, m.Proc)
			m.Proc = nil
		}
	}
	g.mu.Unlock()
	sig, grace := CloseSignal(g.keepDir)
	TerminateAll(procs, sig, grace)
	if !g.keepDir {
		return g.RemoveDir()
	}
	return nil
}

// DataDir creates a server's dataDir, dir/data, with its myid file, and returns its path.
func DataDir(dir string, myid int) (string, error) {
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(myid)+"\n"), 0o644); err != nil {
		return "", err
	}
	return data, nil
}

// RemoveDir removes the ensemble directory.
func (g *Group) RemoveDir() error { return os.RemoveAll(g.root) }
