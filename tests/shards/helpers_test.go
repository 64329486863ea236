package shardstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/client"
	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/zktest"
	"github.com/corral/corral/router"
)

// Every test runs three servers and four data shards, in process and as separate processes
// (ensemble_test.go). With corral.placement=hash (the default) "/" and "/zookeeper" live on the
// root shard (the first data shard) and every other top-level name on
// router.TopLevelShard(name, dataShards).
const (
	numServers = 3
	numShards  = 4
)

var (
	dataShards = func() []uint64 {
		ids := make([]uint64, numShards)
		for i := range ids {
			ids[i] = cluster.DataShardID(i)
		}
		return ids
	}()
	rootShard = dataShards[0]
	acl       = zk.WorldACL(zk.PermAll)
)

// namesOn returns, for each shard in want, a top-level name (prefix plus a number) that lives on
// that shard, and checks the choice against every server's router where the test can see them
// (in process): the tests rely on the names being on those shards, so a placement that
// disagreed must fail here, not pass vacuously later. Repeated shards get distinct names.
func namesOn(t *testing.T, c ensemble, prefix string, want ...uint64) []string {
	t.Helper()
	out := make([]string, len(want))
	used := map[string]bool{}
	for i, id := range want {
		for k := 0; ; k++ {
			name := prefix + strconv.Itoa(k)
			if k > 10000 {
				t.Fatalf("no top-level name %s* on shard %d", prefix, id)
			}
			if used[name] || router.TopLevelShard(name, dataShards) != id {
				continue
			}
			used[name] = true
			out[i] = name
			break
		}
		assertShard(t, c, "/"+out[i], id)
	}
	return out
}

// assertShard checks that path is on shard id: by the placement rule (router.Lookup, a function
// of the path and the data shards that every server computes alike), and with every running
// server's own router when they run in process.
func assertShard(t *testing.T, c ensemble, path string, id uint64) {
	t.Helper()
	if got := shardOf(path); got != id {
		t.Fatalf("hash placement puts %s on shard %d, the test expects %d", path, got, id)
	}
	for i := 0; i < numServers; i++ {
		r := c.router(i)
		if r == nil {
			continue
		}
		if got := r.Lookup(path).ID; got != id {
			t.Fatalf("server %d places %s on shard %d, the test expects %d", i+1, path, got, id)
		}
	}
}

// nonRoot returns the data shards other than the root shard.
func nonRoot() []uint64 { return slices.Clone(dataShards[1:]) }

// connectZK opens a go-zookeeper session with one server (or a proxy), closed by t.Cleanup.
func connectZK(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return zktest.Connect(t, ctx, addr)
}

// connectZKEvents is connectZK with a custom session timeout and the session event channel. The
// host provider always returns addr (a proxy, typically) without go-zookeeper's one-second pause
// after a full round of the host list, so a reconnect is immediate.
func connectZKEvents(t *testing.T, addr string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	zc, ev, err := zk.Connect([]string{addr}, timeout, zk.WithLogger(zktest.QuietLogger),
		zk.WithHostProvider(&oneHost{addr: addr}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Close)
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return zc, ev
			}
		case <-deadline:
			t.Fatalf("no session with %s", addr)
		}
	}
}

// oneHost is a go-zookeeper HostProvider with a single address and no back-off.
type oneHost struct{ addr string }

func (h *oneHost) Init([]string) error { return nil }
func (h *oneHost) Len() int            { return 1 }
func (h *oneHost) Next() (string, bool) {
	return h.addr, false
}
func (h *oneHost) Connected() {}

// moveSession moves a go-zookeeper session that runs through proxy p to the server at addr: it
// cuts the connection (no closeSession) and lets the client reconnect at once, to addr, with
// the same session and its lastZxidSeen.
func moveSession(t *testing.T, p *proxy, ev <-chan zk.Event, addr string) {
	t.Helper()
	p.SetTarget(addr)
	p.Kill()
	waitSession(t, ev, 15*time.Second)
}

// waitSession waits for the next StateHasSession on ev (after a reconnect).
func waitSession(t *testing.T, ev <-chan zk.Event, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateExpired {
				t.Fatal("session expired instead of reconnecting")
			}
			if e.State == zk.StateHasSession {
				return
			}
		case <-deadline:
			t.Fatalf("no session again within %v", within)
		}
	}
}

// dialRaw opens a session with Corral's own client (pipelined asynchronous calls, create2,
// per-op multi results), closed by t.Cleanup.
func dialRaw(t *testing.T, addr string, opts client.Options) *client.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc, err := client.Dial(ctx, []string{addr}, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc
}

// ctxT returns a context that ends after d (or with the test).
func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// viewZxid returns the zxid of server i's latest published view of shard id, or -1 when it
// cannot be seen (a stopped server, or servers in separate processes).
func viewZxid(c ensemble, i int, id uint64) int64 {
	r := c.router(i)
	if r == nil {
		return -1
	}
	v := r.Shard(id).View()
	if v == nil {
		return -1
	}
	return v.Zxid()
}

// waitEvent waits for one event on a watch channel and checks its type and path.
func waitEvent(t *testing.T, ch <-chan zk.Event, typ zk.EventType, path string, within time.Duration) {
	t.Helper()
	select {
	case ev := <-ch:
		if ev.Type != typ || ev.Path != path {
			t.Fatalf("watch on %s: event %v %s, want %v %s", path, ev.Type, ev.Path, typ, path)
		}
	case <-time.After(within):
		t.Fatalf("no %v event for %s within %v", typ, path, within)
	}
}

// noEvent checks that a watch channel holds no event right now.
func noEvent(t *testing.T, ch <-chan zk.Event, what string) {
	t.Helper()
	select {
	case ev := <-ch:
		t.Fatalf("%s: unexpected event %v %s", what, ev.Type, ev.Path)
	default:
	}
}

// must fails the test on err.
func must(t *testing.T, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}

// mustCreate creates path (persistent) or fails the test.
func mustCreate(t *testing.T, zc *zk.Conn, path string, data string) {
	t.Helper()
	if _, err := zc.Create(path, []byte(data), 0, acl); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

// readInt reads a znode whose data is a decimal number.
func readInt(zc *zk.Conn, path string) (int, *zk.Stat, error) {
	d, st, err := zc.Get(path)
	if err != nil {
		return 0, nil, err
	}
	v, err := strconv.Atoi(string(d))
	if err != nil {
		return 0, nil, fmt.Errorf("%s holds %q: %w", path, d, err)
	}
	return v, st, nil
}

// syncAll makes zc's server catch up on every shard (one sync per shard, through a path on it).
func syncAll(t *testing.T, zc *zk.Conn, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := zc.Sync(p); err != nil {
			t.Fatalf("sync %s: %v", p, err)
		}
	}
}

// isConnLoss reports whether err is a lost or closed connection (the outcome is unknown).
func isConnLoss(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrNoServer)
}
