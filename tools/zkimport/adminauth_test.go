package zkimport

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/acl"
	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/testcluster"
)

// TestStatsWithAdminAuth: against a target whose admin port needs an operator
// (corral.admin.digest), setting stats fails with the 401 without Options.AdminAuth and with the
// 403 with a wrong password, and succeeds with the operator's credentials.
func TestStatsWithAdminAuth(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 1, Shards: 1, Admin: true,
		Extra: []string{"corral.admin.digest=" + acl.Digest("importer:s3cret")}})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr := cl.AdminAddr(0)
	c := dial(t, cl.Addrs())
	defer c.Close()
	mustCreate(t, c, "/imported", []byte("x"), 0, zk.WorldACL(zk.PermAll))
	_, st, err := c.Get("/imported")
	must(t, err)
	lines := []cluster.StatLine{{Path: "/imported", Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid,
		Ctime: 1000, Mtime: 2000, Version: 7, Aversion: 0, Cversion: 0}}

	if err := postStats(ctx, addr, "", lines); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("without credentials: %v, want the 401", err)
	}
	if err := postStats(ctx, addr, "importer:wrong", lines); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("with a wrong password: %v, want the 403", err)
	}
	if err := postStats(ctx, addr, "importer:s3cret", lines); err != nil {
		t.Fatalf("with the operator's credentials: %v", err)
	}
	if _, st, err := c.Get("/imported"); err != nil || st.Version != 7 || st.Mtime != 2000 {
		t.Errorf("stat after the import: %+v %v", st, err)
	}
}
