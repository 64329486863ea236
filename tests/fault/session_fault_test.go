package faulttest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/corralproc"
)

// The session-fault tests cut one server off (a pause, or a partition from its peers) for
// longer than the session timeout while a client pinned to it holds an ephemeral "lock" and
// keeps writing, and a client of another server waits for the lock. They check the session
// contract of docs/design.md §4:
//
//   - the pinned client leaves CONNECTED (sees Disconnected) before the majority expires its
//     session (observed as the lock's deletion by the other client);
//   - no operation of the pinned client is acknowledged on the old session after that;
//   - after the fault heals, the pinned client's reconnect with the old session is answered
//     with SESSIONEXPIRED (go-zookeeper's StateExpired), never CONNECTED.

// sessionFaultTimeout is the negotiated session timeout of the tests (tickTime 1 s).
const sessionFaultTimeout = 4 * time.Second

// fault cuts server i off and heals it again.
type fault struct {
	name string
	cut  func(e *corralproc.Ensemble, i int) error
	heal func(e *corralproc.Ensemble, i int) error
}

var pauseFault = fault{
	name: "pause",
	cut:  func(e *corralproc.Ensemble, i int) error { return syscall.Kill(e.Pid(i), syscall.SIGSTOP) },
	heal: func(e *corralproc.Ensemble, i int) error { return syscall.Kill(e.Pid(i), syscall.SIGCONT) },
}

// TestPausedServerSessionExpires: SIGSTOP of the pinned client's server for 2.5 session
// timeouts (a long GC pause or a stopped VM).
func TestPausedServerSessionExpires(t *testing.T) {
	runSessionFault(t, pauseFault, 10*time.Second)
}

type stamped struct {
	at    time.Time
	state zk.State
	sid   int64
}

func runSessionFault(t *testing.T, f fault, outage time.Duration) {
	if testing.Short() {
		t.Skip("multi-process fault test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: 2, TickTime: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const victim = 0

	// The pinned client and its state changes, stamped when they arrive.
	var evMu sync.Mutex
	var events []stamped
	a, evs, err := zk.Connect([]string{e.Addr(victim)}, sessionFaultTimeout, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	evDone := make(chan struct{})
	go func() {
		defer close(evDone)
		for ev := range evs {
			if ev.Type != zk.EventSession {
				continue
			}
			evMu.Lock()
			events = append(events, stamped{at: time.Now(), state: ev.State, sid: a.SessionID()})
			evMu.Unlock()
		}
	}()
	waitState(t, a, zk.StateHasSession)
	oldSession := a.SessionID()
	acl := zk.WorldACL(zk.PermAll)
	if _, err := a.Create("/data", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create("/lock", []byte("a"), zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}

	// The pinned client writes until told to stop, recording when each write was
	// acknowledged and on which session it was sent.
	type ack struct {
		at  time.Time
		sid int64
	}
	var ackMu sync.Mutex
	var acks []ack
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			sid := a.SessionID()
			_, err := a.Set("/data", []byte(fmt.Sprint(i)), -1)
			if err == nil {
				ackMu.Lock()
				acks = append(acks, ack{at: time.Now(), sid: sid})
				ackMu.Unlock()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()

	b, _, err := zk.Connect([]string{e.Addr(1), e.Addr(2)}, sessionFaultTimeout, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	waitState(t, b, zk.StateHasSession)

	time.Sleep(time.Second)
	cutAt := time.Now()
	if err := f.cut(e, victim); err != nil {
		t.Fatal(err)
	}
	healed := false
	heal := func() {
		if !healed {
			healed = true
			if err := f.heal(e, victim); err != nil {
				t.Error(err)
			}
		}
	}
	defer heal()

	// The other client sees the lock go when the majority expires the session, and takes it.
	var goneAt time.Time
	for goneAt.IsZero() {
		ok, _, err := b.Exists("/lock")
		switch {
		case err != nil && !errors.Is(err, zk.ErrConnectionClosed):
			t.Fatalf("other client: %v", err)
		case err == nil && !ok:
			goneAt = time.Now()
		case time.Since(cutAt) > outage+30*time.Second:
			t.Fatal("the majority never expired the cut-off client's session")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := b.Create("/lock", []byte("b"), zk.FlagEphemeral, acl); err != nil {
		t.Fatalf("the other client could not take the lock: %v", err)
	}
	t.Logf("%s: lock released by the majority %.1fs after the cut", f.name, goneAt.Sub(cutAt).Seconds())
	if d := time.Until(cutAt.Add(outage)); d > 0 {
		time.Sleep(d)
	}
	healedAt := time.Now()
	heal()

	// The pinned client must learn that its session expired.
	deadline := time.Now().Add(30 * time.Second)
	var expiredAt time.Time
	for expiredAt.IsZero() && time.Now().Before(deadline) {
		evMu.Lock()
		for _, ev := range events {
			if ev.state == zk.StateExpired {
				expiredAt = ev.at
				break
			}
		}
		evMu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	a.Close()
	<-evDone
	if expiredAt.IsZero() {
		t.Fatalf("the pinned client was never told its session expired (events %v)", describe(events, cutAt))
	}

	// Every state change of the old session after the cut: it must leave CONNECTED before the
	// lock went, and never be connected on the old session again.
	var disconnectedAt time.Time
	for _, ev := range events {
		if ev.at.Before(cutAt) {
			continue
		}
		if ev.state == zk.StateDisconnected && disconnectedAt.IsZero() {
			disconnectedAt = ev.at
		}
		if ev.state == zk.StateHasSession && ev.sid == oldSession {
			t.Errorf("the pinned client was accepted on its old session %.1fs after the cut (events %v)",
				ev.at.Sub(cutAt).Seconds(), describe(events, cutAt))
		}
	}
	if disconnectedAt.IsZero() || !disconnectedAt.Before(goneAt) {
		t.Errorf("the pinned client did not see Disconnected before the majority released its lock "+
			"(disconnected %v, lock gone %.1fs after the cut; events %v)", disconnectedAt, goneAt.Sub(cutAt).Seconds(), describe(events, cutAt))
	}
	late := 0
	for _, k := range acks {
		if k.sid == oldSession && k.at.After(goneAt) {
			late++
		}
	}
	if late > 0 {
		t.Errorf("%d writes acknowledged on the old session after the majority expired it", late)
	}
	t.Logf("%s: disconnected %.1fs after the cut, lock gone at %.1fs, healed at %.1fs, told expired at %.1fs; %d writes acknowledged",
		f.name, disconnectedAt.Sub(cutAt).Seconds(), goneAt.Sub(cutAt).Seconds(), healedAt.Sub(cutAt).Seconds(),
		expiredAt.Sub(cutAt).Seconds(), len(acks))
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
