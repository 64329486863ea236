package quota

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/format"
	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/bothtest"
	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/internal/difftext"
	"github.com/corral/corral/internal/zktest"
	"github.com/corral/corral/tests/zkcli"
)

// quotaCommands exercise zkCli's quota commands on two top-level subtrees ({base} and {base2}
// live on different data shards of Corral): setquota -n/-b/-N/-B on a new and an existing
// quota, the nested quotas zkCli refuses, listquota, delquota with and without a limit, and
// writes that a hard limit refuses (enforceQuota is on) or a soft limit only logs.
func quotaCommands() []zkcli.Command {
	return []zkcli.Command{
		{Line: "create {base} ab"},
		{Line: "create {base}/x xyz"},
		{Line: "listquota {base}"},
		{Line: "setquota -n 10 {base}"},
		{Line: "listquota {base}"},
		{Line: "get /zookeeper/quota{base}/zookeeper_limits"},
		{Line: "get /zookeeper/quota{base}/zookeeper_stats"},
		{Line: "create {base}/y 1234"},
		{Line: "set {base}/x x"},
		{Line: "create {base}/x/z"},
		{Line: "delete {base}/x/z"},
		{Line: "listquota {base}"},
		{Line: "setquota -b 100 {base}"},
		{Line: "setquota -N 4 {base}"},
		{Line: "listquota {base}"},
		{Line: "create {base}/z"},
		{Line: "create {base}/over"},                   // past countHardLimit=4
		{Line: "setquota -n 2 {base}/x"},               // a parent has a quota
		{Line: "setquota -n 2 /zookeeper/quota{base}"}, // under /zookeeper/quota
		{Line: "setquota -n 2 {base}/missing"},
		{Line: "setquota {base}"},
		{Line: "ls /zookeeper/quota"},
		{Line: "ls /zookeeper/quota{base}"},
		{Line: "get -s /zookeeper/quota{base}/zookeeper_stats"},
		{Line: "delquota -n {base}"},
		{Line: "listquota {base}"},
		{Line: "create {base}/over"}, // still past countHardLimit
		{Line: "delquota -N {base}"},
		{Line: "create {base}/over"},
		{Line: "delquota {base}"},
		{Line: "listquota {base}"},
		{Line: "delquota {base}"},
		{Line: "create {base2}"},
		{Line: "create {base2}/a/b"},
		{Line: "create {base2}/a"},
		{Line: "create {base2}/a/b 0123456789"},
		{Line: "setquota -B 20 {base2}/a"},
		{Line: "setquota -n 5 {base2}"}, // a child has a quota
		{Line: "set {base2}/a/b 0123456789012345678901"},
		{Line: "set {base2}/a/b 01234567890"},
		{Line: "setquota -b 5 {base2}/a"},
		{Line: "set {base2}/a/b 012345678901"}, // soft bytes limit passed: logged only
		{Line: "listquota {base2}/a"},
		{Line: "ls -R /zookeeper/quota", Unordered: true},
		{Line: "delquota -B {base2}/a"},
		{Line: "listquota {base2}/a"},
		{Line: "delquota {base2}/a"},
		{Line: "ls /zookeeper/quota"},
		{Line: "deleteall {base}"},
		{Line: "deleteall {base2}"},
	}
}

// corralEnforce is the zoo.cfg key, the ZooKeeper side gets -Dzookeeper.enforceQuota=true.
var corralEnforce = map[string]string{"enforceQuota": "true"}

func startBoth(t *testing.T, ctx context.Context) (*apachezk.Ensemble, *corralproc.Ensemble) {
	t.Helper()
	if err := zkcli.Available(); err != nil {
		t.Fatalf("zkCli is required: %v", err)
	}
	return bothtest.Start(ctx, t, apachezk.Options{
		JVMFlags: []string{"-Dzookeeper.enforceQuota=true"},
		Config:   map[string]string{"forceSync": "no"},
	}, corralproc.Options{Servers: 3, Shards: 2, Config: corralEnforce})
}

// TestQuotaCommandsMatchApacheZooKeeper runs quotaCommands with zkCli against Apache ZooKeeper
// (enforceQuota on) and against a 3-server Corral with two data shards, and requires the same
// transcript; then the same go-zookeeper writes under a quota on both give the same stats.
func TestQuotaCommandsMatchApacheZooKeeper(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	zkEns, corral := startBoth(t, ctx)
	waitLevelProc(t, ctx, corral)
	names := namesOnBothShards(fmt.Sprintf("quota-%d-%d-", os.Getpid(), time.Now().UnixNano()%100000))
	bases := []string{"/" + names[0], "/" + names[1]}

	want, got, err := zkcli.Both(ctx, zkEns.Addr(0), corral.Addr(1), quotaCommands(), bases...)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("Corral's transcript differs from Apache ZooKeeper's (- zookeeper, + corral):\n%s", difftext.Unified(t, "zookeeper", want, "corral", got))
	}
	t.Logf("transcript:\n%s", got)

	// The same writes through go-zookeeper, the stats read after each.
	wantStats := statsSteps(t, ctx, zkEns.Addr(0), bases[1]+"-go")
	gotStats := statsSteps(t, ctx, corral.Addr(2), bases[1]+"-go")
	if gotStats != wantStats {
		t.Fatalf("stats differ (- zookeeper, + corral):\n%s", difftext.Unified(t, "zookeeper", wantStats, "corral", gotStats))
	}
	t.Logf("stats:\n%s", gotStats)
}

// waitLevelProc waits until every server of e applied format.LevelQuota (GET /members): until
// then writes count nothing and /zookeeper/quota stays on the root shard.
func waitLevelProc(t *testing.T, ctx context.Context, e *corralproc.Ensemble) {
	t.Helper()
	for i := 0; i < e.Size(); i++ {
		for {
			var body []byte
			resp, err := http.Get("http://" + e.AdminAddr(i) + "/members")
			if err == nil {
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if err == nil && quotaLevel(string(body)) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("server %d did not reach %v: %q, %v", i+1, format.LevelQuota, body, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// statsSteps makes a quota on base with go-zookeeper as zkCli does, writes below it (creates,
// setData, a multi, an ephemeral whose session closes, deletes) and returns the stats node's
// data after each step, with each step's error.
func statsSteps(t *testing.T, ctx context.Context, addr, base string) string {
	c := zktest.Connect(t, ctx, addr)
	var b strings.Builder
	acl := zk.WorldACL(zk.PermAll)
	stats := "/zookeeper/quota" + base + "/zookeeper_stats"
	step := func(what string, err error) {
		data, st, gerr := c.Get(stats)
		fmt.Fprintf(&b, "%s: %v -> %q len %d version %d %v\n", what, err, data, st.DataLength, st.Version, gerr)
	}
	_, err := c.Create(base, []byte("base"), 0, acl)
	step("create base", err)
	_, err = c.Create(base+"/a", []byte("12345"), 0, acl)
	step("create a", err)
	for _, p := range []string{"/zookeeper/quota" + base} {
		_, err = c.Create(p, nil, 0, acl)
		step("create "+p, err)
	}
	_, err = c.Create("/zookeeper/quota"+base+"/zookeeper_limits", []byte("count=-1,bytes=-1=;byteHardLimit=30;countHardLimit=-1"), 0, acl)
	step("create limits", err)
	_, err = c.Create(stats, []byte("count=0,bytes=0"), 0, acl)
	step("create stats", err)
	_, err = c.Set(base+"/a", []byte("1"), -1)
	step("set a", err)
	_, err = c.Multi(&zk.CreateRequest{Path: base + "/m1", Data: []byte("xx"), Acl: acl},
		&zk.CreateRequest{Path: base + "/m2", Data: []byte("yyy"), Acl: acl})
	step("multi", err)
	_, err = c.Create(base+"/big", []byte(strings.Repeat("z", 40)), 0, acl)
	step("create past byteHardLimit", err)
	_, err = c.Set(base+"/a", []byte(strings.Repeat("z", 40)), -1)
	step("set past byteHardLimit", err)
	e := zktest.Connect(t, ctx, addr)
	_, err = e.Create(base+"/eph", []byte("eph"), zk.FlagEphemeral, acl)
	step("create ephemeral", err)
	e.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if ok, _, _ := c.Exists(base + "/eph"); !ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	step("session closed", nil)
	err = c.Delete(base+"/m1", -1)
	step("delete m1", err)
	_, err = c.Set(stats, []byte("count=100,bytes=1"), -1)
	step("set stats by hand", err)
	_, err = c.Create(base+"/after", nil, 0, acl)
	step("create after", err)
	return b.String()
}
