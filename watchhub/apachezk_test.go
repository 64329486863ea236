package watchhub

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// TestAgainstApacheZooKeeper runs watch scenarios against a real Apache ZooKeeper 3.8 server and
// against a Hub driven by a model tree, and compares, step by step, the result codes and the
// notifications each of two connections receives. It also compares the wchs and mntr counters.
// The scenarios pin the 3.8 behaviours that differ from 3.9 and from the documentation: a
// standard registration replacing a persistent mode, checkWatches answering for the table rather
// than the connection, removeWatches removing one half of a persistent watch. Skipped with -short.
func TestAgainstApacheZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	if err := apachezk.Available(); err != nil {
		t.Fatalf("Apache ZooKeeper is required (or run with -short): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ens, err := apachezk.Start(ctx, apachezk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := ens.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	addr := ens.Addr(0)

	scenarios := []struct {
		name  string
		steps []string // "<conn> <op> <path> [arg]"; paths are relative to the scenario root ~
	}{
		0: {"one-shot data, exists and child watches", []string{
			"1 create /a", "1 getData /a w", "2 exists /b w", "2 getChildren /a w",
			"1 set /a", "1 set /a", "1 create /b", "1 create /a/x", "1 create /a/y",
		}},
		1: {"delete: one event per watcher", []string{
			"1 create /a", "1 getData /a w", "1 getChildren /a w", "2 getChildren /a w", "2 getChildren ~ w",
			"1 delete /a",
		}},
		2: {"persistent watch", []string{
			"1 create /a", "1 addWatch /a pers", "1 set /a", "1 create /a/x", "1 set /a/x", "1 delete /a/x",
			"1 delete /a", "1 create /a",
		}},
		3: {"recursive watch: descendants, no NodeChildrenChanged", []string{
			"1 addWatch ~ rec", "1 create /a", "1 create /a/b", "1 set /a/b", "1 delete /a/b", "1 set ~",
			"2 getData /a w", "1 set /a",
		}},
		4: {"getData over a persistent watch makes its data half one-shot", []string{
			"1 create /a", "1 addWatch /a pers", "1 getData /a w", "2 set /a", "2 set /a", "2 create /a/x",
			"2 create /a/y", "1 check /a data", "1 check /a child",
		}},
		5: {"addWatch over a pending getData watch", []string{
			"1 create /a", "1 getData /a w", "1 addWatch /a pers", "2 set /a", "2 set /a",
		}},
		6: {"getChildren over a recursive watch", []string{
			"1 create /a", "1 addWatch /a rec", "1 getChildren /a w", "2 create /a/x", "2 create /a/y",
			"2 set /a",
		}},
		7: {"checkWatches answers for the table, not the connection", []string{
			"1 create /a", "2 getData /a w", "1 check /a data", "1 check /a any", "1 check /a child",
			"2 check /a child", "1 check /zz any",
		}},
		8: {"removeWatches per type", []string{
			"1 create /a", "1 create /b", "1 create /c", "1 addWatch /a pers", "1 addWatch /b rec",
			"1 getData /c w", "1 getChildren /c w",
			"1 remove /a data", "1 remove /a data", "2 set /a", "2 create /a/x",
			"1 remove /b child", "2 create /b/x", "2 set /b", "2 delete /b/x",
			"1 remove /c child", "1 remove /c child", "1 remove /c any", "1 remove /c any", "2 set /c",
			"2 remove /a any", "1 remove /a any", "2 create /a/y",
		}},
		9: {"exists on a missing node, then create and delete", []string{
			"1 exists /a w", "2 exists /a w", "2 getChildren ~ w", "1 create /a", "1 exists /a w", "1 delete /a",
		}},
		10: {"setWatches catch-up and re-arming", []string{
			"1 create /a", "1 create /b", "1 create /c", "1 create /c/k", "1 mark ~",
			"2 set /a", "2 create /b/x", "2 delete /c/k", "2 delete /c", "2 create /new",
			"1 setWatches ~ d=/a,/b,/c,/none e=/a,/new,/none2 c=/a,/b,/c,/none3 p=/a,/none4 r=/b",
			"2 set /b", "2 create /none", "2 create /none2", "2 create /a/y", "2 create /b/x/z", "2 set /none4",
		}},
		11: {"counters: data and child tables", []string{
			"1 create /a", "1 getData /a w", "1 getChildren /a w", "1 addWatch /a pers", "2 exists /n w",
			"2 addWatch ~ rec", "2 getChildren ~ w",
		}},
	}
	for i, sc := range scenarios {
		t.Run(fmt.Sprintf("%02d-%s", i, sc.name), func(t *testing.T) {
			root := fmt.Sprintf("/watchhub-%d-%d", i, time.Now().UnixNano())
			setup := dialRaw(t, addr, root)
			if code := setup.create(root); code != wire.ErrOK {
				t.Fatalf("create %s: %v", root, code)
			}
			zks := [3]*rawConn{nil, dialRaw(t, addr, root), dialRaw(t, addr, root)}
			m := newModel(root)
			for _, step := range sc.steps {
				f := strings.Fields(step)
				n, _ := strconv.Atoi(f[0])
				path := strings.Replace(f[2], "~", "", 1)
				if path == "" || path[0] == '/' {
					path = root + path
				}
				arg := strings.Join(f[3:], " ")
				want := zks[n].do(f[1], path, arg)
				got := m.do(n, f[1], path, arg)
				if got != want {
					t.Errorf("%s: hub %v, ZooKeeper %v", step, got, want)
				}
				for c := 1; c <= 2; c++ {
					want := zks[c].sync()
					got := m.conns[c].take()
					for j := range got {
						got[j] = strings.Replace(got[j], root, "~", 1)
					}
					if !slices.Equal(got, want) {
						t.Errorf("after %q, connection %d: hub delivered %q, ZooKeeper %q", step, c, got, want)
					}
				}
			}
			wchs, err := apachezk.FourLetterWord(ctx, addr, "wchs")
			if err != nil {
				t.Fatal(err)
			}
			var conns, paths, total int
			if _, err := fmt.Sscanf(wchs, "%d connections watching %d paths\nTotal watches:%d", &conns, &paths,
				&total); err != nil {
				t.Fatalf("wchs %q: %v", wchs, err)
			}
			if m.hub.Paths() != paths || m.hub.Count() != total {
				t.Errorf("hub Paths %d Count %d; wchs says %q", m.hub.Paths(), m.hub.Count(), wchs)
			}
			mntr, err := apachezk.FourLetterWord(ctx, addr, "mntr")
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("zk_watch_count\t%d\n", m.hub.WatchCount()); !strings.Contains(mntr, want) {
				t.Errorf("hub WatchCount %d; mntr says %q", m.hub.WatchCount(), grepLine(mntr, "zk_watch_count"))
			}
			for _, z := range zks[1:] {
				z.close()
			}
			setup.close()
		})
	}
}

func grepLine(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// rawConn is a ZooKeeper client connection speaking through package wire, synchronously.
type rawConn struct {
	t      *testing.T
	c      net.Conn
	r      *bufio.Reader
	root   string
	xid    int32
	buf    []byte
	events []string
	zxid   int64 // the last reply's zxid
	mark   int64
}

func dialRaw(t *testing.T, addr, root string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	z := &rawConn{t: t, c: c, r: bufio.NewReader(c), root: root}
	z.write(func(e *wire.Encoder) {
		(&wire.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)}).Encode(e)
	})
	var resp wire.ConnectResponse
	if err := resp.Decode(wire.NewDecoder(z.frame())); err != nil || resp.SessionID == 0 {
		t.Fatalf("connect: %v %+v", err, resp)
	}
	return z
}

func (z *rawConn) write(body func(e *wire.Encoder)) {
	z.t.Helper()
	e := wire.NewEncoder(nil)
	m := wire.BeginFrame(e)
	body(e)
	wire.EndFrame(e, m)
	if _, err := z.c.Write(e.Bytes()); err != nil {
		z.t.Fatal(err)
	}
}

func (z *rawConn) frame() []byte {
	z.t.Helper()
	var err error
	if z.buf, err = wire.ReadFrame(z.r, z.buf, wire.DefaultMaxBuffer); err != nil {
		z.t.Fatal(err)
	}
	return z.buf
}

// call sends one request and returns the reply's error code; notifications that arrive first are
// recorded with the scenario root shown as ~.
func (z *rawConn) call(op wire.OpCode, req wire.Record) wire.Err {
	z.t.Helper()
	z.xid++
	xid := z.xid
	z.write(func(e *wire.Encoder) {
		(&wire.RequestHeader{Xid: xid, Op: op}).Encode(e)
		if req != nil {
			req.Encode(e)
		}
	})
	for {
		d := wire.NewDecoder(z.frame())
		var h wire.ReplyHeader
		if err := h.Decode(d); err != nil {
			z.t.Fatal(err)
		}
		if h.Xid == wire.XidNotification {
			var ev wire.WatcherEvent
			if err := ev.Decode(d); err != nil {
				z.t.Fatal(err)
			}
			s := evName[ev.Type] + " " + strings.Replace(ev.Path, z.root, "~", 1)
			if ev.State != wire.StateSyncConnected {
				s += fmt.Sprintf(" state=%d", ev.State)
			}
			z.events = append(z.events, s)
			continue
		}
		if h.Xid != xid {
			z.t.Fatalf("xid %d, want %d", h.Xid, xid)
		}
		z.zxid = h.Zxid
		return h.Err
	}
}

func (z *rawConn) create(path string) wire.Err {
	return z.call(wire.OpCreate, &wire.CreateRequest{Path: path, ACL: wire.OpenACLUnsafe})
}

// sync returns the notifications the server queued on this connection before now: a round trip
// on the connection flushes them, since ZooKeeper queues events before the reply of the write
// that triggered them.
func (z *rawConn) sync() []string {
	z.call(wire.OpExists, &wire.ExistsRequest{Path: "/zookeeper"})
	ev := z.events
	z.events = nil
	return ev
}

func (z *rawConn) close() {
	z.call(wire.OpCloseSession, nil)
	z.c.Close()
}

var watcherTypes = map[string]int32{"child": wire.WatcherChildren, "data": wire.WatcherData, "any": wire.WatcherAny}

func (z *rawConn) do(op, path, arg string) wire.Err {
	watch := arg == "w"
	switch op {
	case "create":
		return z.create(path)
	case "delete":
		return z.call(wire.OpDelete, &wire.DeleteRequest{Path: path, Version: -1})
	case "set":
		return z.call(wire.OpSetData, &wire.SetDataRequest{Path: path, Data: []byte("x"), Version: -1})
	case "getData":
		return z.call(wire.OpGetData, &wire.GetDataRequest{Path: path, Watch: watch})
	case "exists":
		return z.call(wire.OpExists, &wire.ExistsRequest{Path: path, Watch: watch})
	case "getChildren":
		return z.call(wire.OpGetChildren, &wire.GetChildrenRequest{Path: path, Watch: watch})
	case "addWatch":
		mode := wire.AddWatchPersistent
		if arg == "rec" {
			mode = wire.AddWatchPersistentRecursive
		}
		return z.call(wire.OpAddWatch, &wire.AddWatchRequest{Path: path, Mode: mode})
	case "check":
		return z.call(wire.OpCheckWatches, &wire.CheckWatchesRequest{Path: path, Type: watcherTypes[arg]})
	case "remove":
		return z.call(wire.OpRemoveWatches, &wire.RemoveWatchesRequest{Path: path, Type: watcherTypes[arg]})
	case "mark":
		z.mark = z.zxid
		return wire.ErrOK
	case "setWatches":
		l := setWatchLists(path, arg)
		return z.call(wire.OpSetWatches2, &wire.SetWatches2{RelativeZxid: z.mark, DataWatches: l['d'],
			ExistWatches: l['e'], ChildWatches: l['c'], PersistentWatches: l['p'], PersistentRecursiveWatches: l['r']})
	}
	z.t.Fatalf("unknown op %s", op)
	return 0
}

// setWatchLists parses "d=/a,/b e=/c ..." (the fields after the path, joined by spaces) into the
// setWatches lists by kind, paths made absolute under root.
func setWatchLists(root, arg string) map[byte][]string {
	out := map[byte][]string{'d': {}, 'e': {}, 'c': {}, 'p': {}, 'r': {}}
	for _, f := range strings.Fields(arg) {
		k, v, _ := strings.Cut(f, "=")
		for _, p := range strings.Split(v, ",") {
			out[k[0]] = append(out[k[0]], root+p)
		}
	}
	return out
}

// model is a minimal ZooKeeper server around a Hub: a set of existing paths, the watch
// registrations of FinalRequestProcessor/DataTree and the events of DataTree's writes.
type model struct {
	hub   *Hub
	nodes map[string]bool
	zxid  int64
	stat  map[string][2]int64 // mzxid, pzxid
	mark  int64
	conns [3]*fakeConn
}

func newModel(root string) *model {
	m := &model{hub: New(Options{}), nodes: map[string]bool{"/": true, "/zookeeper": true, root: true},
		stat: map[string][2]int64{}}
	for i := range m.conns {
		m.conns[i] = &fakeConn{id: uint64(i)}
	}
	return m
}

func (m *model) hasChildren(p string) bool {
	for q := range m.nodes {
		if parent(q) == p {
			return true
		}
	}
	return false
}

func (m *model) do(n int, op, path, arg string) wire.Err {
	w := m.conns[n]
	watch := arg == "w"
	ev := func(typ wire.EventType, p string) shard.Event {
		return shard.Event{Type: typ, Path: p, ACL: wire.OpenACLUnsafe}
	}
	switch op {
	case "create":
		if m.nodes[path] {
			return wire.ErrNodeExists
		}
		if !m.nodes[parent(path)] {
			return wire.ErrNoNode
		}
		m.nodes[path] = true
		m.zxid++
		m.stat[path] = [2]int64{m.zxid, m.zxid}
		m.stat[parent(path)] = [2]int64{m.stat[parent(path)][0], m.zxid}
		m.hub.Trigger([]shard.Event{ev(wire.EventNodeCreated, path), ev(wire.EventNodeChildrenChanged, parent(path))})
	case "delete":
		if !m.nodes[path] {
			return wire.ErrNoNode
		}
		if m.hasChildren(path) {
			return wire.ErrNotEmpty
		}
		delete(m.nodes, path)
		m.zxid++
		m.stat[parent(path)] = [2]int64{m.stat[parent(path)][0], m.zxid}
		m.hub.Trigger([]shard.Event{ev(wire.EventNodeDeleted, path), ev(wire.EventNodeChildrenChanged, parent(path))})
	case "set":
		if !m.nodes[path] {
			return wire.ErrNoNode
		}
		m.zxid++
		m.stat[path] = [2]int64{m.zxid, m.stat[path][1]}
		m.hub.Trigger([]shard.Event{ev(wire.EventNodeDataChanged, path)})
	case "getData", "getChildren":
		if !m.nodes[path] {
			return wire.ErrNoNode
		}
		if watch && op == "getData" {
			m.hub.AddData(w, path)
		} else if watch {
			m.hub.AddChild(w, path)
		}
	case "exists":
		if watch {
			m.hub.AddData(w, path)
		}
		if !m.nodes[path] {
			return wire.ErrNoNode
		}
	case "addWatch":
		if arg == "rec" {
			m.hub.AddPersistentRecursive(w, path)
		} else {
			m.hub.AddPersistent(w, path)
		}
	case "check":
		if !m.hub.Has(w, path, watcherTypes[arg]) {
			return wire.ErrNoWatcher
		}
	case "remove":
		if !m.hub.Remove(w, path, watcherTypes[arg]) {
			return wire.ErrNoWatcher
		}
	case "mark":
		m.mark = m.zxid
	case "setWatches":
		l := setWatchLists(path, arg)
		m.hub.SetWatches(w, m.mark, l['d'], l['e'], l['c'], l['p'], l['r'], func(p string) (int64, int64, bool) {
			st := m.stat[p]
			return st[0], st[1], m.nodes[p]
		})
	}
	return wire.ErrOK
}
