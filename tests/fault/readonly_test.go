package faulttest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/internal/nemesis"
)

// TestReadOnlyMode: with readonlymode.enabled, a server cut off from its peers serves
// read-only clients, as ZooKeeper's read-only mode does (docs/compatibility.md, which also says
// where ZooKeeper 3.8 needs localSessionsEnabled for it, as this test configures it). The
// checks, each also run against Apache ZooKeeper 3.8 with CORRAL_FAULT_TARGET=zookeeper:
//
//   - the cut-off server answers isro with "ro" (ZooKeeper: syncLimit × tickTime, then up to
//     2 s more);
//   - client B, a kazoo client with read_only=True started then, becomes CONNECTED_RO, reads,
//     and has its writes refused with NOTREADONLY;
//   - client A, pinned to the victim with a read-write session before the cut, is not served
//     on that session while the server is cut off;
//   - a client that did not ask for read-only gets no session there;
//   - after the heal, both kazoo clients work read-write again (on new sessions: A's expired
//     with the majority, B's was local to the read-only server).
func TestReadOnlyMode(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault test")
	}
	if err := nemesis.Available(); err != nil {
		t.Skip(err)
	}
	if err := exec.Command(python, "-c", "import kazoo").Run(); err != nil {
		t.Fatalf("kazoo is required (python3-kazoo, make deps): %v", err)
	}
	start := func(ctx context.Context, victim int) (ensemble, error) {
		return corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: 2, TickTime: time.Second,
			ServerUID: map[int]int{victim: nobody}, Config: map[string]string{"readonlymode.enabled": "true"}})
	}
	if os.Getenv("CORRAL_FAULT_TARGET") == "zookeeper" {
		if err := apachezk.Available(); err != nil {
			t.Skip(err)
		}
		start = func(ctx context.Context, victim int) (ensemble, error) {
			// ZooKeeper 3.8 creates a read-only server's sessions as local sessions only with
			// localSessionsEnabled; without it, it answers every connect in read-only mode with
			// a bare NOTREADONLY reply header that no client can parse (docs/compatibility.md).
			return apachezk.Start(ctx, apachezk.Options{Servers: 3, TickTime: time.Second,
				ServerUID: map[int]int{victim: nobody}, JVMFlags: []string{"-Dreadonlymode.enabled=true"},
				Config: map[string]string{"localSessionsEnabled": "true", "localSessionsUpgradingEnabled": "true"}})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const victim = 0
	e, err := start(ctx, victim)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var others []string
	for i := 1; i < e.Size(); i++ {
		others = append(others, e.Addr(i))
	}
	w, _, err := zk.Connect(others, sessionFaultTimeout, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	waitState(t, w, zk.StateHasSession)
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/ro", "/ro-w"} {
		if _, err := w.Create(p, []byte("before"), 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	// The victim has applied the write before the cut.
	probe := dial(t, e.Addr(victim))
	if _, err := probe.Sync("/ro"); err != nil {
		t.Fatal(err)
	}
	probe.Close()

	// A has a read-write session when the cut comes; B starts once the victim is read-only.
	a := startReadOnlyClient(t, e.Addr(victim), "/ro")
	if a.wait(t, time.Time{}, 30*time.Second, func(o roObservation) bool {
		return o.State == "CONNECTED" && o.Data == "before" && o.Write == "ok"
	}).IsZero() {
		t.Fatalf("client A never worked read-write before the cut:%s", a.describe(time.Now()))
	}

	f := partitionFault(nemesis.Both)
	cutAt, heal := f.start(t, e, victim)
	defer heal()
	if _, err := w.Set("/ro", []byte("after"), -1); err != nil {
		t.Fatalf("the majority's write: %v", err)
	}
	var isroAt time.Time
	for deadline := time.Now().Add(40 * time.Second); isroAt.IsZero(); time.Sleep(100 * time.Millisecond) {
		if out, err := corralproc.FourLetterWord(ctx, e.Addr(victim), "isro"); err == nil && strings.TrimSpace(out) == "ro" {
			isroAt = time.Now()
		} else if time.Now().After(deadline) {
			t.Fatalf("the cut-off server never answered isro with ro (last: %q %v)", out, err)
		}
	}
	b := startReadOnlyClient(t, e.Addr(victim), "/ro")
	roAt := b.wait(t, isroAt, 30*time.Second, func(o roObservation) bool { return o.State == "CONNECTED_RO" })
	if roAt.IsZero() {
		t.Fatalf("client B never became CONNECTED_RO:%s", b.describe(cutAt))
	}
	time.Sleep(2 * time.Second) // a few rounds of reads and writes in read-only mode
	for _, o := range b.since(roAt) {
		// The read answers from the cut-off server's replicas: the value before the cut, or the
		// majority's write if the server had it (ZooKeeper's leader may have sent it in time).
		if o.State == "CONNECTED_RO" && ((o.Data != "before" && o.Data != "after") || o.Write != "!NotReadOnlyCallError") {
			t.Errorf("client B read-only: read %q and write %q, want a value and NotReadOnlyCallError", o.Data, o.Write)
		}
	}
	// A's session is a read-write one: the read-only server refuses to take it (ZooKeeper:
	// "Refusing global session reconnection in RO mode").
	sidA := ""
	for _, o := range a.since(time.Time{}) {
		if o.State == "CONNECTED" && o.Write == "ok" {
			sidA = o.Sid
		}
	}
	for _, o := range a.since(cutAt) {
		if o.Sid == sidA && (o.State == "CONNECTED_RO" || (o.State == "CONNECTED" && o.Write == "ok")) {
			t.Errorf("client A was served on its read-write session %s while its server was cut off: %+v", sidA, o)
		}
	}
	// A client that did not ask for read-only gets no session from the cut-off server.
	c, evs, err := zk.Connect([]string{e.Addr(victim)}, sessionFaultTimeout, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	got := false
	for deadline := time.After(3 * time.Second); !got; {
		select {
		case ev := <-evs:
			got = ev.State == zk.StateHasSession
			continue
		case <-deadline:
		}
		break
	}
	c.Close()
	if got {
		t.Error("a read-write client got a session from the cut-off server in read-only mode")
	}

	healedAt := time.Now()
	heal()
	for name, r := range map[string]*roClient{"A": a, "B": b} {
		rwAt := r.wait(t, healedAt, 60*time.Second, func(o roObservation) bool {
			return o.State == "CONNECTED" && o.Data == "after" && o.Write == "ok"
		})
		if rwAt.IsZero() {
			t.Fatalf("client %s never worked read-write again after the heal:%s", name, r.describe(cutAt))
		}
		t.Logf("client %s: read-write again %.1fs after the heal; observations:%s", name, rwAt.Sub(healedAt).Seconds(), r.describe(cutAt))
	}
	t.Logf("server read-only (isro) %.1fs after the cut; client B CONNECTED_RO %.1fs after that",
		isroAt.Sub(cutAt).Seconds(), roAt.Sub(isroAt).Seconds())
}

// roObservation is one line of kazoo_readonly.py.
type roObservation struct {
	T     float64 `json:"t"`
	State string  `json:"state"`
	Sid   string  `json:"sid"`
	Data  string  `json:"data"`
	Write string  `json:"write"`
}

func (o roObservation) at() time.Time { return time.Unix(0, int64(o.T*1e9)) }

type roClient struct {
	mu  sync.Mutex
	obs []roObservation
}

func startReadOnlyClient(t *testing.T, host, path string) *roClient {
	r := &roClient{}
	runPython(t, "testdata/kazoo_readonly.py", func(line []byte) {
		var o roObservation
		if json.Unmarshal(line, &o) == nil {
			r.mu.Lock()
			r.obs = append(r.obs, o)
			r.mu.Unlock()
		}
	}, host, path, fmt.Sprint(sessionFaultTimeout.Seconds()))
	return r
}

// since returns the observations at or after from.
func (r *roClient) since(from time.Time) []roObservation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []roObservation
	for _, o := range r.obs {
		if !o.at().Before(from) {
			out = append(out, o)
		}
	}
	return out
}

// wait returns the time of the first observation at or after from for which ok holds, waiting
// up to limit; the zero time if there was none.
func (r *roClient) wait(t *testing.T, from time.Time, limit time.Duration, ok func(roObservation) bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		for _, o := range r.since(from) {
			if ok(o) {
				return o.at()
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *roClient) describe(from time.Time) string {
	var b strings.Builder
	for _, o := range r.since(time.Time{}) {
		fmt.Fprintf(&b, "\n  %+.2fs %s session=%s read=%s write=%s", o.at().Sub(from).Seconds(), o.State, o.Sid, o.Data, o.Write)
	}
	return b.String()
}
