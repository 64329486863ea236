package clustertest

import (
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/testcluster"
)

// TestDirtyReplicaSyncsEarly: a data replica that holds corral.syncDirtyZnodes changed znodes
// gets its state sync long before corral.snapshotEntries entries (docs/storage.md, "The cost of
// a Sync"): with 100,000 entries between snapshots and a limit of 50, creating 120 znodes makes
// every server's replica sync at least 50 of them.
func TestDirtyReplicaSyncsEarly(t *testing.T) {
	logs := &testcluster.LogBuffer{}
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 1,
		Extra: []string{"corral.snapshotEntries=100000", "corral.syncDirtyZnodes=50"},
		Log:   logs.Logger(slog.LevelDebug)})
	c, _ := connect(t, cl.Addrs())
	for i := 0; i < 120; i++ {
		if _, err := c.Create(fmt.Sprintf("/d%03d", i), []byte{1}, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	synced := regexp.MustCompile(`msg="(state synced|slow state sync[^"]*)".* nodes=(\d+)`)
	server := regexp.MustCompile(`server=(\d+)`)
	deadline := time.Now().Add(20 * time.Second)
	for {
		servers := map[string]bool{}
		for _, line := range regexp.MustCompile("\n").Split(logs.String(), -1) {
			m := synced.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			if n, _ := strconv.Atoi(m[2]); n >= 50 {
				if s := server.FindStringSubmatch(line); s != nil {
					servers[s[1]] = true
				}
			}
		}
		if len(servers) == 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("servers that synced at least 50 changed znodes early: %v, want all 3", servers)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
