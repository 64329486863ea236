package clustertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/testcluster"
	"github.com/corral/corral/internal/zktest"
)

// TestPlacementPage: the admin /placement page lists every top-level znode with the shard that
// serves it (the same answer the router gives), and every data shard's view.
func TestPlacementPage(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := zktest.Connect(t, ctx, cl.Addrs()[0])
	names := []string{"kafka", "hbase", "solr", "app"}
	for _, n := range names {
		if _, err := c.Create("/"+n, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	srv := cl.Server(0)
	text := srv.PlacementText()
	if !strings.Contains(text, "placement=hash root_shard=2\n") {
		t.Fatalf("placement page:\n%s", text)
	}
	for id := 2; id <= 5; id++ {
		if !strings.Contains(text, fmt.Sprintf("shard=%d tag=%d znodes=", id, id-1)) {
			t.Errorf("shard %d missing from the page:\n%s", id, text)
		}
	}
	for _, n := range append(names, "zookeeper") {
		want := fmt.Sprintf("subtree=/%s shard=%d\n", n, srv.Router().Lookup("/"+n).ID)
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %q:\n%s", want, text)
		}
	}
}
