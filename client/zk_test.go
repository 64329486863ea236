package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/wire"
	"go.uber.org/goleak"
)

// One standalone Apache ZooKeeper serves every test in this file; it is started on first use
// and stopped by TestMain.
var (
	zkOnce sync.Once
	zkEns  *apachezk.Ensemble
	zkErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if zkEns != nil {
		zkEns.Close()
	}
	// Every Conn goroutine must have stopped once the tests closed their connections.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func zkAddrs(t *testing.T) []string {
	t.Helper()
	zkOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		zkEns, zkErr = apachezk.Start(ctx, apachezk.Options{TickTime: 500 * time.Millisecond})
	})
	if zkErr != nil {
		t.Fatalf("starting Apache ZooKeeper: %v", zkErr)
	}
	return zkEns.Addrs()
}

func dialZK(t *testing.T, opts Options) *Conn {
	t.Helper()
	addrs := zkAddrs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, addrs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestZKHandshake(t *testing.T) {
	for _, ro := range []bool{false, true} {
		c := dialZK(t, Options{SessionTimeout: 4 * time.Second, SendReadOnly: ro})
		if c.SessionID() == 0 || len(c.Passwd()) != wire.PasswordLen {
			t.Fatalf("readOnly byte %v: session %x passwd %d bytes", ro, c.SessionID(), len(c.Passwd()))
		}
		if c.Timeout() != 4*time.Second {
			t.Fatalf("negotiated timeout %v, want 4s (tickTime 500ms clamps to [1s, 10s])", c.Timeout())
		}
	}
}

func TestZKCRUD(t *testing.T) {
	c := dialZK(t, Options{})
	ctx := ctxT(t)
	root := fmt.Sprintf("/crud-%d", time.Now().UnixNano())
	p, st, err := c.Create(ctx, root, []byte("hello"), wire.FlagPersistent, nil)
	if err != nil || p != root || st.Version != 0 || st.DataLength != 5 || st.Czxid == 0 {
		t.Fatalf("Create = %q %+v %v", p, st, err)
	}
	if _, _, err := c.Create(ctx, root, nil, 0, nil); !errors.Is(err, wire.ErrNodeExists) {
		t.Fatalf("second Create: %v", err)
	}
	data, st, err := c.Get(ctx, root, false)
	if err != nil || string(data) != "hello" || st.Version != 0 {
		t.Fatalf("Get = %q %+v %v", data, st, err)
	}
	st, err = c.Set(ctx, root, []byte("world"), 0)
	if err != nil || st.Version != 1 {
		t.Fatalf("Set = %+v %v", st, err)
	}
	if _, err := c.Set(ctx, root, []byte("x"), 0); !errors.Is(err, wire.ErrBadVersion) {
		t.Fatalf("Set with stale version: %v", err)
	}
	// null data stays null, empty stays empty
	if _, _, err := c.Create(ctx, root+"/null", nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Create(ctx, root+"/empty", []byte{}, 0, nil); err != nil {
		t.Fatal(err)
	}
	if d, _, _ := c.Get(ctx, root+"/null", false); d != nil {
		t.Fatalf("null data read back as %q", d)
	}
	if d, _, _ := c.Get(ctx, root+"/empty", false); d == nil || len(d) != 0 {
		t.Fatalf("empty data read back as %v", d)
	}
	seq, _, err := c.Create(ctx, root+"/s-", nil, wire.FlagPersistentSequential, nil)
	if err != nil || seq != root+"/s-0000000002" {
		t.Fatalf("sequential Create = %q %v", seq, err)
	}
	kids, st, err := c.Children(ctx, root, false)
	sort.Strings(kids)
	if err != nil || fmt.Sprint(kids) != "[empty null s-0000000002]" || st.NumChildren != 3 {
		t.Fatalf("Children = %v %+v %v", kids, st, err)
	}
	ok, st, err := c.Exists(ctx, root+"/null", false)
	if !ok || err != nil || st.DataLength != 0 {
		t.Fatalf("Exists = %v %+v %v", ok, st, err)
	}
	if err := c.Delete(ctx, root, -1); !errors.Is(err, wire.ErrNotEmpty) {
		t.Fatalf("Delete non-empty: %v", err)
	}
	for _, k := range kids {
		if err := c.Delete(ctx, root+"/"+k, -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(ctx, root, 5); !errors.Is(err, wire.ErrBadVersion) {
		t.Fatalf("Delete with wrong version: %v", err)
	}
	if err := c.Delete(ctx, root, 1); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := c.Exists(ctx, root, false); ok || err != nil {
		t.Fatalf("Exists after delete = %v %v", ok, err)
	}
	if _, _, err := c.Get(ctx, root, false); !errors.Is(err, wire.ErrNoNode) {
		t.Fatalf("Get after delete: %v", err)
	}
	if p, err := c.Sync(ctx, "/"); err != nil || p != "/" {
		t.Fatalf("Sync = %q %v", p, err)
	}
	if c.LastZxid() <= 0 {
		t.Fatalf("LastZxid = %d", c.LastZxid())
	}
}

func TestZKPipelined10kGetData(t *testing.T) {
	c := dialZK(t, Options{})
	ctx := ctxT(t)
	const nodes, n = 16, 10000
	root := fmt.Sprintf("/pipe-%d", time.Now().UnixNano())
	if _, _, err := c.Create(ctx, root, nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("x"), 1000)
	for i := 0; i < nodes; i++ {
		d := append([]byte(fmt.Sprintf("%04d", i)), payload...)
		if _, _, err := c.Create(ctx, fmt.Sprintf("%s/n%d", root, i), d, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	var got, bad atomic.Int64
	var order atomic.Int64
	done := make(chan struct{})
	for i := 0; i < n; i++ {
		i := i
		want := fmt.Sprintf("%04d", i%nodes)
		c.GetDataAsync(fmt.Sprintf("%s/n%d", root, i%nodes), false, func(data []byte, st wire.Stat, err error) {
			if err != nil || len(data) != 1004 || string(data[:4]) != want || order.Add(1)-1 != int64(i) {
				bad.Add(1)
			}
			if got.Add(1) == n {
				close(done)
			}
		})
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("%d of %d replies", got.Load(), n)
	}
	if bad.Load() != 0 {
		t.Fatalf("%d replies mismatched", bad.Load())
	}
	if o := c.Outstanding(); o != 0 {
		t.Fatalf("%d still outstanding", o)
	}
}

func TestZKWatchEvents(t *testing.T) {
	c := dialZK(t, Options{})
	w := dialZK(t, Options{})
	ctx := ctxT(t)
	root := fmt.Sprintf("/watch-%d", time.Now().UnixNano())
	// exists watch on a missing node fires NodeCreated
	if ok, _, err := w.Exists(ctx, root, true); ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, _, err := c.Create(ctx, root, []byte("a"), 0, nil); err != nil {
		t.Fatal(err)
	}
	expect := func(typ wire.EventType, path string) {
		t.Helper()
		select {
		case ev := <-w.Events():
			if ev.Type != typ || ev.Path != path || ev.State != wire.StateSyncConnected {
				t.Fatalf("event %+v, want type %d on %s", ev, typ, path)
			}
		case <-ctx.Done():
			t.Fatalf("no event type %d on %s", typ, path)
		}
	}
	expect(wire.EventNodeCreated, root)
	// data watch fires NodeDataChanged, child watch NodeChildrenChanged
	if _, _, err := w.Get(ctx, root, true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Children(ctx, root, true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(ctx, root, []byte("b"), -1); err != nil {
		t.Fatal(err)
	}
	expect(wire.EventNodeDataChanged, root)
	if _, _, err := c.Create(ctx, root+"/k", nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	expect(wire.EventNodeChildrenChanged, root)
	// persistent recursive watch sees every change below
	if err := w.AddWatch(ctx, root, wire.AddWatchPersistentRecursive); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(ctx, root+"/k", []byte("1"), -1); err != nil {
		t.Fatal(err)
	}
	expect(wire.EventNodeDataChanged, root+"/k")
	if err := c.Delete(ctx, root+"/k", -1); err != nil {
		t.Fatal(err)
	}
	expect(wire.EventNodeDeleted, root+"/k")
}

func TestZKMulti(t *testing.T) {
	c := dialZK(t, Options{})
	ctx := ctxT(t)
	root := fmt.Sprintf("/multi-%d", time.Now().UnixNano())
	rs, err := c.Multi(ctx,
		wire.MultiOp{Op: wire.OpCreate2, Create: &wire.CreateRequest{Path: root, Data: []byte("r"), ACL: wire.OpenACLUnsafe}},
		wire.MultiOp{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: root + "/a", ACL: wire.OpenACLUnsafe}},
		wire.MultiOp{Op: wire.OpSetData, SetData: &wire.SetDataRequest{Path: root, Data: []byte("s"), Version: 0}},
		wire.MultiOp{Op: wire.OpCheck, Check: &wire.CheckVersionRequest{Path: root, Version: 1}},
	)
	if err != nil || len(rs) != 4 || rs[0].Path != root || rs[1].Path != root+"/a" || rs[2].Stat.Version != 1 {
		t.Fatalf("Multi = %+v %v", rs, err)
	}
	// A failing multi applies nothing and reports the failing op's code.
	rs, err = c.Multi(ctx,
		wire.MultiOp{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: root + "/b", ACL: wire.OpenACLUnsafe}},
		wire.MultiOp{Op: wire.OpDelete, Delete: &wire.DeleteRequest{Path: root + "/missing", Version: -1}},
		wire.MultiOp{Op: wire.OpSetData, SetData: &wire.SetDataRequest{Path: root, Version: -1}},
	)
	if !errors.Is(err, wire.ErrNoNode) || len(rs) != 3 {
		t.Fatalf("failing Multi = %+v %v", rs, err)
	}
	if rs[0].Err != wire.ErrOK || rs[1].Err != wire.ErrNoNode || rs[2].Err != wire.ErrRuntimeInconsistency {
		t.Fatalf("per-op codes %v %v %v", rs[0].Err, rs[1].Err, rs[2].Err)
	}
	if ok, _, _ := c.Exists(ctx, root+"/b", false); ok {
		t.Fatal("failed multi created a node")
	}
}

func TestZKClose(t *testing.T) {
	c := dialZK(t, Options{})
	ctx := ctxT(t)
	root := fmt.Sprintf("/close-%d", time.Now().UnixNano())
	if _, _, err := c.Create(ctx, root, nil, wire.FlagEphemeral, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, _, err := c.Get(ctx, root, false); !errors.Is(err, ErrClosed) || !errors.Is(err, wire.ErrConnectionLoss) {
		t.Fatalf("Get after Close: %v", err)
	}
	// closeSession removed the session's ephemeral node at once
	o := dialZK(t, Options{})
	if ok, _, err := o.Exists(ctx, root, false); ok || err != nil {
		t.Fatalf("ephemeral still there after Close: %v %v", ok, err)
	}
}
