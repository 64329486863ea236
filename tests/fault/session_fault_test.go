package faulttest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/internal/nemesis"
)

// The session-fault tests cut one server off (a pause, or a partition from its peers) for
// longer than the session timeout while two clients pinned to it each hold an ephemeral "lock"
// (one keeps writing, one keeps reading), and a client of the other servers waits for the
// locks. They check the session contract of docs/design.md §4 for each pinned client:
//
//   - it leaves CONNECTED (sees Disconnected) before the majority expires its session
//     (observed as the lock's deletion by the other client);
//   - none of its operations is acknowledged on the old session after that;
//   - after the fault heals, its reconnect with the old session is answered with
//     SESSIONEXPIRED (go-zookeeper's StateExpired), never CONNECTED once the session expired.

// sessionFaultTimeout is the negotiated session timeout of the tests (tickTime 1 s).
const sessionFaultTimeout = 4 * time.Second

// ensemble is what the session-fault runner needs of a set of server processes: Corral's
// (internal/corralproc) or Apache ZooKeeper's (internal/apachezk).
type ensemble interface {
	Size() int
	Addr(i int) string
	Pid(i int) int
	QuorumPorts(i int) []int
	Close() error
}

// startFunc starts a 3-server ensemble with tickTime 1 s, server victim running as uid (if
// not 0).
type startFunc func(ctx context.Context, victim, uid int) (ensemble, error)

func startCorral(ctx context.Context, victim, uid int) (ensemble, error) {
	opts := corralproc.Options{Servers: 3, Shards: 2, TickTime: time.Second}
	if uid != 0 {
		opts.ServerUID = map[int]int{victim: uid}
	}
	return corralproc.Start(ctx, opts)
}

func startZooKeeper(ctx context.Context, victim, uid int) (ensemble, error) {
	opts := apachezk.Options{Servers: 3, TickTime: time.Second}
	if uid != 0 {
		opts.ServerUID = map[int]int{victim: uid}
	}
	return apachezk.Start(ctx, opts)
}

// fault cuts server i off and heals it again.
type fault struct {
	name string
	// uid, if not 0, runs the victim under this user id (the partition's iptables rules tell
	// its packets apart by it).
	uid  int
	cut  func(e ensemble, i int) error
	heal func(e ensemble, i int) error
}

// start cuts server victim off and returns when, and a heal function that may be called more
// than once (the caller defers it, and calls it when the outage is over).
func (f fault) start(t *testing.T, e ensemble, victim int) (time.Time, func()) {
	t.Helper()
	at := time.Now()
	if err := f.cut(e, victim); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	return at, func() {
		once.Do(func() {
			if err := f.heal(e, victim); err != nil {
				t.Error(err)
			}
		})
	}
}

// nobody is the user id a partitioned server runs as.
const nobody = 65534

// partitionFault cuts the victim's Raft traffic with its peers in direction d (clients still
// reach it).
func partitionFault(d nemesis.Direction) fault {
	var p *nemesis.Partition
	return fault{
		name: "partition-" + d.String(),
		uid:  nobody,
		cut: func(e ensemble, i int) error {
			var peers []int
			for j := 0; j < e.Size(); j++ {
				if j != i {
					peers = append(peers, e.QuorumPorts(j)...)
				}
			}
			var err error
			p, err = nemesis.Isolate(e.QuorumPorts(i), nobody, peers, d)
			return err
		},
		heal: func(ensemble, int) error { return p.Heal() },
	}
}

// TestPartitionedServerSessionExpires: the pinned client's server is cut off from both peers
// for 12 s (3 session timeouts); clients still reach it.
func TestPartitionedServerSessionExpires(t *testing.T) {
	if err := nemesis.Available(); err != nil {
		t.Skip(err)
	}
	failOn(t, runSessionFault(t, startCorral, partitionFault(nemesis.Both), 0, 12*time.Second))
}

var pauseFault = fault{
	name: "pause",
	cut:  func(e ensemble, i int) error { return syscall.Kill(e.Pid(i), syscall.SIGSTOP) },
	heal: func(e ensemble, i int) error { return syscall.Kill(e.Pid(i), syscall.SIGCONT) },
}

// TestPausedServerSessionExpires: SIGSTOP of the pinned client's server for 2.5 session
// timeouts (a long GC pause or a stopped VM).
func TestPausedServerSessionExpires(t *testing.T) {
	failOn(t, runSessionFault(t, startCorral, pauseFault, 0, 10*time.Second))
}

// TestSessionFaultSoak runs CORRAL_FAULT_SOAK randomized session-fault runs (make
// faults-soak): a pause or a partition (symmetric, inbound only, outbound only) of a random
// server for between 1.25 and 3 session timeouts. CORRAL_FAULT_SEED repeats a sequence. With
// CORRAL_FAULT_TARGET=zookeeper the same runs go against Apache ZooKeeper 3.8 and violations
// are reported (logged and counted), not failed: that is how the checks were validated, and
// what docs/reliability.md compares with.
func TestSessionFaultSoak(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("CORRAL_FAULT_SOAK"))
	if runs <= 0 {
		t.Skip("set CORRAL_FAULT_SOAK=N to run N randomized session-fault runs")
	}
	seed, err := strconv.ParseUint(os.Getenv("CORRAL_FAULT_SEED"), 10, 64)
	if err != nil {
		seed = uint64(time.Now().UnixNano())
	}
	start, report := startCorral, failOn
	if os.Getenv("CORRAL_FAULT_TARGET") == "zookeeper" {
		if err := apachezk.Available(); err != nil {
			t.Skip(err)
		}
		start, report = startZooKeeper, logViolations
	}
	t.Logf("seed %d (CORRAL_FAULT_SEED repeats it)", seed)
	rnd := rand.New(rand.NewPCG(seed, 0))
	faults := []func() fault{func() fault { return pauseFault }}
	if nemesis.Available() == nil {
		faults = append(faults, func() fault { return partitionFault(nemesis.Both) },
			func() fault { return partitionFault(nemesis.Inbound) }, func() fault { return partitionFault(nemesis.Outbound) })
	}
	failed := 0
	for i := 0; i < runs; i++ {
		f := faults[rnd.IntN(len(faults))]()
		victim := rnd.IntN(3)
		outage := sessionFaultTimeout*5/4 + time.Duration(rnd.Int64N(int64(sessionFaultTimeout*7/4)))
		outage = outage.Round(100 * time.Millisecond)
		t.Run(fmt.Sprintf("%02d-%s-server%d-%.1fs", i, f.name, victim+1, outage.Seconds()), func(t *testing.T) {
			v := runSessionFault(t, start, f, victim, outage)
			if len(v) > 0 {
				failed++
			}
			report(t, v)
		})
	}
	t.Logf("%d runs, %d with violations", runs, failed)
}

// logViolations reports violations without failing (runs against Apache ZooKeeper).
func logViolations(t *testing.T, violations []string) {
	for _, v := range violations {
		t.Log("VIOLATION: " + v)
	}
}

type stamped struct {
	at    time.Time
	state zk.State
	sid   int64
}

// pinned is a client connected only to the victim: it holds the ephemeral lock /lock-<name>
// and either writes /data-<name> or reads its lock in a loop, recording when each operation
// was acknowledged and on which session it was sent.
type pinned struct {
	name    string
	writer  bool
	c       *zk.Conn
	session int64 // the session it held when the fault began

	mu     sync.Mutex
	events []stamped
	acks   []stamped
	evDone chan struct{}
}

func connectPinned(t *testing.T, addr, name string, writer bool) *pinned {
	c, evs, err := zk.Connect([]string{addr}, sessionFaultTimeout, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	p := &pinned{name: name, writer: writer, c: c, evDone: make(chan struct{})}
	go func() {
		defer close(p.evDone)
		for ev := range evs {
			if ev.Type == zk.EventSession {
				p.mu.Lock()
				p.events = append(p.events, stamped{at: time.Now(), state: ev.State, sid: c.SessionID()})
				p.mu.Unlock()
			}
		}
	}()
	waitState(t, c, zk.StateHasSession)
	p.session = c.SessionID()
	acl := zk.WorldACL(zk.PermAll)
	if _, err := c.Create("/data-"+name, nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/lock-"+name, []byte(name), zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	return p
}

// run does the client's operations until stop is closed.
func (p *pinned) run(stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		sid := p.c.SessionID()
		var err error
		if p.writer {
			_, err = p.c.Set("/data-"+p.name, []byte(fmt.Sprint(i)), -1)
		} else {
			_, _, err = p.c.Get("/lock-" + p.name)
		}
		if err == nil {
			p.mu.Lock()
			p.acks = append(p.acks, stamped{at: time.Now(), sid: sid})
			p.mu.Unlock()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *pinned) expiredAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ev := range p.events {
		if ev.state == zk.StateExpired {
			return ev.at
		}
	}
	return time.Time{}
}

// failOn fails the test for every violation.
func failOn(t *testing.T, violations []string) {
	t.Helper()
	for _, v := range violations {
		t.Error(v)
	}
}

// runSessionFault cuts server victim off for outage with f and returns the pinned clients'
// violations of the session contract.
func runSessionFault(t *testing.T, start startFunc, f fault, victim int, outage time.Duration) (violations []string) {
	if testing.Short() {
		t.Skip("multi-process fault test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := start(ctx, victim, f.uid)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var others []string
	for i := 0; i < e.Size(); i++ {
		if i != victim {
			others = append(others, e.Addr(i))
		}
	}

	clients := []*pinned{connectPinned(t, e.Addr(victim), "writer", true), connectPinned(t, e.Addr(victim), "reader", false)}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range clients {
		defer p.c.Close()
		wg.Add(1)
		go func() { defer wg.Done(); p.run(stop) }()
	}
	b, _, err := zk.Connect(others, sessionFaultTimeout, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	waitState(t, b, zk.StateHasSession)

	time.Sleep(time.Second)
	cutAt, heal := f.start(t, e, victim)
	defer heal()

	// The other client sees each lock go when the majority expires its session, and takes it.
	goneAt := make([]time.Time, len(clients))
	for left := len(clients); left > 0; {
		for i, p := range clients {
			if !goneAt[i].IsZero() {
				continue
			}
			// Errors are retried: the majority may be electing a leader (the victim led).
			ok, _, err := b.Exists("/lock-" + p.name)
			switch {
			case err == nil && !ok:
				goneAt[i] = time.Now()
				left--
				for {
					_, err := b.Create("/lock-"+p.name, []byte("b"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
					if err == nil {
						break
					}
					if errors.Is(err, zk.ErrNodeExists) {
						// An earlier attempt that lost its connection may have created it.
						if _, st, err := b.Get("/lock-" + p.name); err == nil && st.EphemeralOwner == b.SessionID() {
							break
						}
					}
					if errors.Is(err, zk.ErrNodeExists) || time.Since(cutAt) > outage+30*time.Second {
						t.Fatalf("the other client could not take the lock: %v", err)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		}
		if time.Since(cutAt) > outage+30*time.Second {
			t.Fatal("the majority never expired the cut-off clients' sessions")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d := time.Until(cutAt.Add(outage)); d > 0 {
		time.Sleep(d)
	}
	healedAt := time.Now()
	heal()

	// Each pinned client must learn that its session expired.
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range clients {
		for p.expiredAt().IsZero() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	close(stop)
	wg.Wait()
	for i, p := range clients {
		p.c.Close()
		<-p.evDone
		check := func(format string, args ...any) {
			violations = append(violations, fmt.Sprintf("%s, %s client: "+format+" (events%s)",
				append([]any{f.name, p.name}, append(args, describe(p.events, cutAt))...)...))
		}
		expiredAt := p.expiredAt()
		if expiredAt.IsZero() {
			check("never told its session expired")
		}
		// It must leave CONNECTED before the lock went, and never be connected on the old
		// session again.
		var disconnectedAt time.Time
		for _, ev := range p.events {
			if ev.at.Before(cutAt) {
				continue
			}
			if ev.state == zk.StateDisconnected && disconnectedAt.IsZero() {
				disconnectedAt = ev.at
			}
			if ev.state == zk.StateHasSession && ev.sid == p.session && ev.at.After(goneAt[i]) {
				check("accepted on its old session %.1fs after the cut, after the majority expired it", ev.at.Sub(cutAt).Seconds())
			}
		}
		if disconnectedAt.IsZero() || !disconnectedAt.Before(goneAt[i]) {
			check("did not see Disconnected before the majority released its lock (%.1fs after the cut)",
				goneAt[i].Sub(cutAt).Seconds())
		}
		late := 0
		for _, k := range p.acks {
			if k.sid == p.session && k.at.After(goneAt[i]) {
				late++
			}
		}
		if late > 0 {
			check("%d operations acknowledged on the old session after the majority expired it", late)
		}
		t.Logf("%s, %s client: disconnected %s after the cut, lock released at %s, healed at %s, told expired at %s; %d operations acknowledged",
			f.name, p.name, since(cutAt, disconnectedAt), since(cutAt, goneAt[i]), since(cutAt, healedAt), since(cutAt, expiredAt), len(p.acks))
	}
	return violations
}

// since formats t relative to from, "never" for the zero time.
func since(from, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return fmt.Sprintf("%.1fs", t.Sub(from).Seconds())
}

func waitState(t *testing.T, c *zk.Conn, want zk.State) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.State() != want {
		if time.Now().After(deadline) {
			t.Fatalf("client state %v, want %v", c.State(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func describe(evs []stamped, from time.Time) string {
	s := ""
	for _, ev := range evs {
		s += fmt.Sprintf(" %+.2fs:%v", ev.at.Sub(from).Seconds(), ev.state)
	}
	return s
}
