package quota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/format"
	"github.com/corral/corral/internal/testcluster"
	"github.com/corral/corral/internal/zktest"
	"github.com/corral/corral/router"
)

var dataShards = []uint64{cluster.DataShardID(0), cluster.DataShardID(1)}

// namesOnBothShards returns a top-level name for each data shard (hash placement).
func namesOnBothShards(prefix string) []string {
	out := make([]string, len(dataShards))
	for i := 0; slices.Contains(out, ""); i++ {
		name := fmt.Sprintf("%s%d", prefix, i)
		for j, id := range dataShards {
			if out[j] == "" && router.TopLevelShard(name, dataShards) == id {
				out[j] = name
			}
		}
	}
	return out
}

// setQuota does what zkCli's setquota does for a new quota on path.
func setQuota(t *testing.T, c *zk.Conn, path, limits string) {
	t.Helper()
	p := "/zookeeper/quota"
	for _, comp := range strings.Split(path[1:], "/") {
		p += "/" + comp
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	if _, err := c.Create(p+"/zookeeper_limits", []byte(limits), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create limits of %s: %v", path, err)
	}
	if _, err := c.Create(p+"/zookeeper_stats", []byte("count=0,bytes=0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create stats of %s: %v", path, err)
	}
}

func mustCreate(t *testing.T, c *zk.Conn, path, data string) {
	t.Helper()
	if _, err := c.Create(path, []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

// quotaLevel reports whether a /members text shows the ensemble at format.LevelQuota or a
// later level.
func quotaLevel(text string) bool {
	m := levelLine.FindStringSubmatch(text)
	if m == nil {
		return false
	}
	n, err := strconv.Atoi(m[1])
	return err == nil && format.Level(n) >= format.LevelQuota
}

var levelLine = regexp.MustCompile(`format level=(\d+) `)

func waitLevel(t *testing.T, cl *testcluster.Cluster, servers int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < servers; i++ {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			text, err := cl.Server(i).MembersText(ctx)
			cancel()
			if err == nil && quotaLevel(text) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server %d did not reach %v: %q, %v", i+1, format.LevelQuota, text, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestQuotasAcrossShards: quotas on two top-level subtrees that live on different data shards,
// with enforceQuota on every server. The quota nodes of each live on its subtree's shard, the
// stats follow the writes and read the same through every server, a hard limit refuses with
// QUOTAEXCEEDED, and moving a quota'd subtree is refused.
func TestQuotasAcrossShards(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const servers = 3
	logs := &testcluster.LogBuffer{}
	cl := testcluster.Start(t, testcluster.Options{Servers: servers, Shards: 2, Extra: []string{"enforceQuota=true"},
		Log: logs.Logger(slog.LevelWarn)})
	waitLevel(t, cl, servers)
	c := zktest.Connect(t, ctx, cl.Addrs()[0])
	names := namesOnBothShards(fmt.Sprintf("q%d-", time.Now().UnixNano()%1000))
	for i, name := range names {
		base := "/" + name
		mustCreate(t, c, base, "ab")
		mustCreate(t, c, base+"/x", "xyz")
		setQuota(t, c, base, "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=4")
		mustCreate(t, c, base+"/y", "1234")
		if _, err := c.Set(base+"/x", []byte("x"), -1); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, c, base+"/y/z", "")
		if err := c.Delete(base+"/y/z", -1); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, c, base+"/z", "")
		// 4 nodes: one more passes countHardLimit.
		if _, err := c.Create(base+"/over", nil, 0, zk.WorldACL(zk.PermAll)); err == nil || err.Error() != "unknown error: -125" {
			t.Fatalf("%s: create past the hard limit: %v, want QUOTAEXCEEDED (-125)", name, err)
		}
		// The quota nodes live on the subtree's shard; /zookeeper/quota on the root holds a stub.
		sh := cl.Server(0).Router().Lookup("/zookeeper/quota" + base + "/zookeeper_stats")
		if sh.ID != dataShards[i] {
			t.Fatalf("%s: its quota nodes are on shard %d, want %d", name, sh.ID, dataShards[i])
		}
		if _, ok := sh.View().Get("/zookeeper/quota" + base + "/zookeeper_limits"); !ok {
			t.Fatalf("%s: no limits node on shard %d", name, sh.ID)
		}
	}
	kids, _, err := c.Children("/zookeeper/quota")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(kids)
	if want := slices.Sorted(slices.Values(names)); !slices.Equal(kids, want) {
		t.Fatalf("/zookeeper/quota lists %v, want %v", kids, want)
	}
	// Every server's replicas hold the same stats.
	for i := 0; i < servers; i++ {
		ci := zktest.Connect(t, ctx, cl.Addrs()[i])
		for _, name := range names {
			if _, err := ci.Sync("/" + name); err != nil {
				t.Fatal(err)
			}
			got, _, err := ci.Get("/zookeeper/quota/" + name + "/zookeeper_stats")
			if err != nil || string(got) != "count=4,bytes=7" {
				t.Fatalf("server %d, %s: stats %q, %v; want count=4,bytes=7", i+1, name, got, err)
			}
		}
	}
	// A soft limit only logs.
	soft := "/" + names[1] + "-soft"
	mustCreate(t, c, soft, "")
	setQuota(t, c, soft, "count=1,bytes=-1")
	mustCreate(t, c, soft+"/a", "")
	if want := "Quota exceeded: " + soft + " [current count=2, softCountLimit=1]"; !strings.Contains(logs.String(), want) {
		t.Fatalf("no log line %q", want)
	}
	// A quota'd subtree does not move.
	_, err = cl.Server(0).Router().Move(ctx, "/"+names[0], dataShards[1])
	if !errors.Is(err, router.ErrMoveRefused) || !strings.Contains(err.Error(), "quota") {
		t.Fatalf("move of a quota'd subtree: %v, want refused for its quota", err)
	}
	// delquota as zkCli does it (delete the quota's nodes, then the empty path nodes).
	for _, p := range []string{"/zookeeper_limits", "/zookeeper_stats", ""} {
		if err := c.Delete("/zookeeper/quota/"+names[0]+p, -1); err != nil {
			t.Fatalf("delete %s: %v", p, err)
		}
	}
	if _, err := cl.Server(0).Router().Move(ctx, "/"+names[0], dataShards[1]); err != nil {
		t.Fatalf("move after delquota: %v", err)
	}
}
