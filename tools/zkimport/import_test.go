package zkimport

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/bothtest"
	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/internal/zktest"
)

// TestLiveImportFromZooKeeper builds a tree in Apache ZooKeeper 3.8 (data that is binary, empty
// and null, digest ACLs, a sequential queue with a gap, an ephemeral, rewritten data and ACLs,
// several top-level subtrees, two thousand znodes), imports it into a Corral ensemble, and
// compares every znode: data, ACL and stat (everything but what the ephemeral changes: its
// parent's child count). The next sequential child gets the same name on both. A second
// import stops at the first existing znode; with Skip it creates nothing.
func TestLiveImportFromZooKeeper(t *testing.T) {
	ctx, src, dst := startBoth(t, apachezk.Options{}, corralproc.Options{})

	zc := dial(t, src.Addrs())
	defer zc.Close()
	must(t, zc.AddAuth("digest", []byte("user:pass")))
	build(t, zc)
	eph := dial(t, src.Addrs()) // keeps its ephemeral alive during the import
	defer eph.Close()
	mustCreate(t, eph, "/app/eph", []byte("e"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))

	opts := Options{From: src.Addrs(), To: dst.Addrs(), Admin: dst.AdminAddr(0), Auth: []string{"digest:user:pass"}}
	sum, err := Run(ctx, opts)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	t.Logf("import: %s", sum)

	cc := dial(t, dst.Addrs())
	defer cc.Close()
	must(t, cc.AddAuth("digest", []byte("user:pass")))
	compared := zktest.CompareTrees(t, zc, cc, "/")
	if compared < 2000 || sum.Created != int64(compared) {
		t.Fatalf("compared %d znodes, the import created %d", compared, sum.Created)
	}
	if _, _, err := cc.Get("/app/eph"); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("the ephemeral was copied: %v", err)
	}
	// The next sequential child gets the same name on both.
	a, err := zc.Create("/queue/item-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	must(t, err)
	b, err := cc.Create("/queue/item-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	must(t, err)
	if a != b {
		t.Fatalf("next sequential child: ZooKeeper %s, Corral %s", a, b)
	}

	if _, err := Run(ctx, opts); err == nil {
		t.Fatal("a second import into the same tree did not stop at an existing znode")
	}
	opts.Existing = Skip
	sum, err = Run(ctx, opts)
	if err != nil || sum.Created != 0 || sum.Skipped != int64(compared)+1 { // +1: the sequential child made on both
		t.Fatalf("import with Skip: %s, %v", sum, err)
	}
}

// startBoth starts a 1-server Apache ZooKeeper (the source) and a 1-server Corral ensemble
// (the target), both closed when the test ends, and returns a context for the test's work.
func startBoth(t *testing.T, zo apachezk.Options, co corralproc.Options) (context.Context, *apachezk.Ensemble, *corralproc.Ensemble) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Apache ZooKeeper and a Corral ensemble")
	}
	if err := apachezk.Available(); err != nil {
		t.Fatalf("Apache ZooKeeper is required (make deps, or run with -short): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	src, dst := bothtest.Start(ctx, t, zo, co)
	return ctx, src, dst
}

func build(t *testing.T, c *zk.Conn) {
	open := zk.WorldACL(zk.PermAll)
	secret := zk.DigestACL(zk.PermAll, "user", "pass")
	mustCreate(t, c, "/app", []byte("a"), 0, open)
	mustCreate(t, c, "/app/bin", []byte{0, 0xff, 7}, 0, open)
	mustCreate(t, c, "/app/empty", []byte{}, 0, open)
	mustCreate(t, c, "/app/null", nil, 0, open)
	mustCreate(t, c, "/app/secret", []byte("s"), 0, secret)
	mustCreate(t, c, "/app/secret/inner", []byte("i"), 0, secret)
	mustCreate(t, c, "/app/cfg", []byte("v0"), 0, open)
	for i := 1; i <= 3; i++ {
		_, err := c.Set("/app/cfg", []byte(fmt.Sprintf("v%d", i)), -1)
		must(t, err)
	}
	mustCreate(t, c, "/app/acl", nil, 0, open)
	_, err := c.SetACL("/app/acl", zk.WorldACL(zk.PermRead|zk.PermWrite), -1)
	must(t, err)
	mustCreate(t, c, "/queue", nil, 0, open)
	for i := 0; i < 5; i++ {
		mustCreate(t, c, "/queue/item-", []byte{byte(i)}, zk.FlagSequence, open)
	}
	must(t, c.Delete("/queue/item-0000000002", -1))
	for _, p := range []string{"/kafka", "/kafka/brokers", "/kafka/brokers/ids", "/kafka/config"} {
		mustCreate(t, c, p, nil, 0, open)
	}
	mustCreate(t, c, "/bulk", nil, 0, open)
	errs := make(chan error, 32)
	for w := 0; w < 32; w++ { // go-zookeeper pipelines the calls of concurrent goroutines
		go func() {
			var err error
			for i := w; i < 2000 && err == nil; i += 32 {
				_, err = c.Create(fmt.Sprintf("/bulk/n%04d", i), []byte("x"), 0, open)
			}
			errs <- err
		}()
	}
	for w := 0; w < 32; w++ {
		must(t, <-errs)
	}
}

func dial(t *testing.T, addrs []string) *zk.Conn {
	t.Helper()
	c, err := Connect(addrs, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustCreate(t *testing.T, c *zk.Conn, p string, data []byte, flags int32, acl []zk.ACL) {
	t.Helper()
	if _, err := c.Create(p, data, flags, acl); err != nil {
		t.Fatalf("create %s: %v", p, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
