package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/acl"
	"github.com/corral/corral/adminauth"
	"github.com/corral/corral/format"
	"github.com/corral/corral/internal/testcluster"
	"github.com/corral/corral/internal/zktest"
	"github.com/corral/corral/tools/backupfile"
)

// start starts a one-server ensemble with three data shards, TTL nodes and an admin port.
func start(t *testing.T) *testcluster.Cluster { return startN(t, 1) }

// startN is start with n servers and extra zoo.cfg lines.
func startN(t *testing.T, n int, extra ...string) *testcluster.Cluster {
	t.Helper()
	return testcluster.Start(t, testcluster.Options{Servers: n, Shards: 3, Admin: true,
		Extra: append([]string{"zookeeper.extendedTypesEnabled=true"}, extra...)})
}

// operator is the admin operator of the target ensembles of TestBackupRestore.
const operator = "op:pw"

// postRestore sends body to POST /restore at admin with the operator credentials cred ("":
// none) and returns the status and the answer.
func postRestore(t *testing.T, ctx context.Context, admin, cred string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+admin+"/restore", bytes.NewReader(body))
	must(t, err)
	adminauth.SetHeader(req, cred)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// build makes the tree of TestBackupRestore in c (authenticated as digest user:pass): data that
// is binary, empty and null, digest ACLs, rewritten data and ACLs, a sequential queue with a
// gap, a container, a TTL node, and ten top-level subtrees of 300 children each.
func build(t *testing.T, ctx context.Context, c *zk.Conn) {
	t.Helper()
	open := zk.WorldACL(zk.PermAll)
	digest := zk.DigestACL(zk.PermAll, "user", "pass")
	create := func(p string, data []byte, flags int32, acl []zk.ACL) {
		t.Helper()
		if _, err := c.Create(p, data, flags, acl); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	create("/app", []byte("v0"), 0, open)
	create("/app/bin", []byte{0, 1, 2, 255}, 0, open)
	create("/app/empty", []byte{}, 0, open)
	create("/app/null", nil, 0, open)
	create("/app/secret", []byte("s"), 0, digest)
	create("/app/secret/inner", nil, 0, digest)
	for i := 1; i <= 2; i++ {
		_, err := c.Set("/app", []byte(fmt.Sprintf("v%d", i)), -1)
		must(t, err)
	}
	_, err := c.SetACL("/app/bin", zk.WorldACL(zk.PermRead|zk.PermAdmin), -1)
	must(t, err)
	create("/queue", nil, 0, open)
	for i := 0; i < 5; i++ {
		create("/queue/item-", []byte{byte(i)}, zk.FlagSequence, open)
	}
	must(t, c.Delete("/queue/item-0000000002", -1))
	_, err = c.CreateContainer("/cont", []byte("c"), zk.FlagContainer, open)
	must(t, err)
	create("/cont/kid", nil, 0, open)
	_, err = c.CreateTTL("/ttl", []byte("t"), zk.FlagTTL, open, time.Hour)
	must(t, err)
	create("/eph", nil, 0, open)
	// Quotas (docs/design.md §17), as zkCli's setquota makes them: on /app (counted by the
	// shard of /app) and on a node two levels down; the writes after them move their stats.
	for _, q := range []string{"/app", "/s3/n001"} {
		p := "/zookeeper/quota"
		for _, comp := range strings.Split(q[1:], "/") {
			p += "/" + comp
			create(p, nil, 0, open)
		}
		create(p+"/zookeeper_limits", []byte("count=1000,bytes=-1"), 0, open)
		create(p+"/zookeeper_stats", []byte("count=0,bytes=0"), 0, open)
	}
	create("/app/later", []byte("12345"), 0, open)
	for s := 0; s < 10; s++ {
		top := fmt.Sprintf("/s%d", s)
		create(top, []byte(top), 0, open)
		for b := 0; b < 3; b++ {
			var ops []any
			for i := 0; i < 100; i++ {
				ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/n%03d", top, b*100+i), Data: []byte{byte(i)}, Acl: open})
			}
			if _, err := c.Multi(ops...); err != nil {
				t.Fatalf("multi under %s: %v", top, err)
			}
		}
	}
}

// TestBackupRestore (issue 13 item 3): a tree with every kind of znode, spread over three data
// shards, with an ephemeral, is backed up and restored into a fresh ensemble; every znode is
// equal, stat included, the container and TTL node keep their types, the ephemeral is left
// out, every shard's clock is past the largest restored zxid afterwards, and a second restore
// is refused (the target is no longer empty). Before that, a truncated and a corrupt copy of
// the file are refused with the offset of the problem, and write nothing.
func TestBackupRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two ensembles")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The target's admin port has an operator: loopback is not trusted, a POST /restore
	// without credentials is refused.
	src, dst := start(t), startN(t, 1, "corral.admin.digest="+acl.Digest(operator))
	waitLevel(t, ctx, src, dst) // quotas are counted from format.LevelQuota on
	sc := zktest.Connect(t, ctx, src.Addrs()...)
	must(t, sc.AddAuth("digest", []byte("user:pass")))
	build(t, ctx, sc)
	eph := zktest.Connect(t, ctx, src.Addrs()...)
	_, err := eph.Create("/eph/e", []byte("gone"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	must(t, err)
	shards := map[uint64]bool{}
	for s := 0; s < 10; s++ {
		shards[src.Server(0).Router().Lookup(fmt.Sprintf("/s%d", s)).ID] = true
	}
	if len(shards) < 2 {
		t.Fatalf("the subtrees all live on one shard: %v", shards)
	}

	file := filepath.Join(t.TempDir(), "corral.backup")
	var progress bytes.Buffer
	sum, err := Backup(ctx, Options{Admin: src.AdminAddr(0), File: file, Progress: &progress})
	must(t, err)
	t.Logf("backup: %s", sum)
	if sum.Znodes < 3000 || sum.Shards != 3 {
		t.Fatalf("backup: %s", sum)
	}
	if _, err := os.Stat(file + ".partial"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the partial file is left: %v", err)
	}

	// A truncated and a corrupt copy are refused before anything is written: by corral
	// restore, which checks the file before it sends it, and by POST /restore itself (400),
	// which checks the body as it arrives. A POST without an operator is refused (401).
	good, err := os.ReadFile(file)
	must(t, err)
	admin := dst.AdminAddr(0)
	if code, msg := postRestore(t, ctx, admin, "", good); code != http.StatusUnauthorized {
		t.Fatalf("POST /restore without credentials: %d %s", code, msg)
	}
	bad := filepath.Join(t.TempDir(), "bad.backup")
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", good[:len(good)/2], "truncated"},
		{"corrupt", flip(good, len(good)/3), "checksum mismatch"},
		{"corrupt trailer", flip(good, len(good)-10), "checksum mismatch"},
		{"not a backup", []byte("ZKSNAPSHOT"), "wrong magic"},
	} {
		must(t, os.WriteFile(bad, tc.data, 0o600))
		_, err := Restore(ctx, Options{Admin: admin, AdminAuth: operator, File: bad})
		var fe *backupfile.FormatError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "at byte") {
			t.Fatalf("%s file: %v", tc.name, err)
		}
		code, msg := postRestore(t, ctx, admin, operator, tc.data)
		if code != http.StatusBadRequest || !strings.Contains(msg, tc.want) || !strings.Contains(msg, "at byte") {
			t.Fatalf("%s file, POST /restore: %d %s", tc.name, code, msg)
		}
		t.Logf("%s file: %v; POST /restore: %d %s", tc.name, err, code, msg)
	}
	dc := zktest.Connect(t, ctx, dst.Addrs()...)
	if kids, _, err := dc.Children("/"); err != nil || len(kids) != 1 {
		t.Fatalf("a refused file wrote something: / has %v (%v)", kids, err)
	}

	var rprogress bytes.Buffer
	rsum, err := Restore(ctx, Options{Admin: admin, AdminAuth: operator, File: file, Progress: &rprogress})
	must(t, err)
	t.Logf("restore: %s, %d ACLs", rsum, rsum.ACLs)
	must(t, dc.AddAuth("digest", []byte("user:pass")))
	n := zktest.CompareTrees(t, sc, dc, "/")
	// The quotas: every node below /zookeeper/quota equal, stat and data.
	q := zktest.CompareTrees(t, sc, dc, "/zookeeper/quota")
	if n < 3000 || q != 7 || int64(n+q)+2 != sum.Znodes { // +2: the root and /zookeeper/quota
		t.Fatalf("compared %d znodes and %d quota znodes, the backup holds %d", n, q, sum.Znodes)
	}
	for _, p := range []string{"/", "/zookeeper/quota"} {
		_, rs, err := sc.Get(p)
		must(t, err)
		_, rd, err := dc.Get(p)
		must(t, err)
		if *rs != *rd {
			t.Errorf("%s: stat\n %+v, want\n %+v", p, *rd, *rs)
		}
	}
	// The stats nodes hold the counts of the restored subtrees (the restore's creates were
	// counted afresh, as ZooKeeper recounts when it loads a snapshot), which are the backup's.
	for p, want := range map[string]string{"/app": "count=7,bytes=12", "/s3/n001": "count=1,bytes=1"} {
		d, _, err := dc.Get("/zookeeper/quota" + p + "/zookeeper_stats")
		must(t, err)
		if string(d) != want {
			t.Errorf("quota stats of %s restored as %q, want %q", p, d, want)
		}
	}
	if _, _, err := dc.Get("/eph/e"); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("the ephemeral was restored: %v", err)
	}
	r := dst.Server(0).Router()
	for p, kind := range map[string]string{"/cont": "container", "/ttl": "ttl", "/app": "persistent"} {
		if n, ok := r.Lookup(p).View().Get(p); !ok || n.Kind() != kind {
			t.Fatalf("%s restored as %v %q, want %q", p, ok, n.Kind(), kind)
		}
	}
	if n, _ := r.Lookup("/ttl").View().Get("/ttl"); n.TTL() != time.Hour.Milliseconds() {
		t.Fatalf("/ttl restored with TTL %d", n.TTL())
	}
	// Every shard's clock is past every restored zxid: new writes anywhere sort after them.
	for _, sh := range r.Shards() {
		if z := sh.View().Zxid(); z <= sum.MaxZxid {
			t.Fatalf("shard %d: zxid %#x after the restore, the backup's largest is %#x", sh.ID, z, sum.MaxZxid)
		}
	}
	for s := 0; s < 10; s++ {
		p := fmt.Sprintf("/s%d/after", s)
		_, err := dc.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		must(t, err)
		_, st, err := dc.Get(p)
		must(t, err)
		if st.Czxid <= sum.MaxZxid {
			t.Fatalf("%s: czxid %#x, not above the restored %#x", p, st.Czxid, sum.MaxZxid)
		}
	}
	// The next sequential child gets the same name as in the source.
	a, err := sc.Create("/queue/item-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	must(t, err)
	b, err := dc.Create("/queue/item-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	must(t, err)
	if a != b {
		t.Fatalf("next sequential child: source %s, restored %s", a, b)
	}
	if _, err := Restore(ctx, Options{Admin: admin, AdminAuth: operator, File: file}); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("a restore into a non-empty ensemble: %v", err)
	}
	if code, msg := postRestore(t, ctx, admin, operator, good); code != http.StatusConflict || !strings.Contains(msg, "not empty") {
		t.Fatalf("POST /restore into a non-empty ensemble: %d %s", code, msg)
	}
	// The metrics: one backup sent, its cut timed; one restore done, six refused (four bad
	// bodies, two into a non-empty ensemble; the POST without credentials never reached it).
	for _, m := range []struct {
		admin, series string
		want          float64
	}{
		{src.AdminAddr(0), `corral_backups_total{result="sent"}`, 1},
		{src.AdminAddr(0), `corral_backups_total{result="no_cut"}`, 0},
		{src.AdminAddr(0), `corral_backup_cut_stall_seconds_count`, 1},
		{admin, `corral_restores_total{result="done"}`, 1},
		{admin, `corral_restores_total{result="refused"}`, 6},
		{admin, `corral_restores_total{result="failed"}`, 0},
	} {
		if got := metric(t, m.admin, m.series); got != m.want {
			t.Errorf("%s: %s = %v, want %v", m.admin, m.series, got, m.want)
		}
	}
	if a := metric(t, src.AdminAddr(0), "corral_backup_cut_attempts_total"); a < 1 {
		t.Errorf("corral_backup_cut_attempts_total = %v", a)
	}
	if s := metric(t, src.AdminAddr(0), "corral_backup_cut_stall_seconds_sum"); s <= 0 || s > 5 {
		t.Errorf("corral_backup_cut_stall_seconds_sum = %v", s)
	}
}

// waitLevel waits until every cluster's first server reports format level 6 (LevelCut) or
// later, as a fresh ensemble does within seconds.
func waitLevel(t *testing.T, ctx context.Context, cls ...*testcluster.Cluster) {
	t.Helper()
	for _, c := range cls {
		for {
			text, err := c.Server(0).MembersText(ctx)
			var lvl int
			if err == nil {
				fmt.Sscanf(text, "format level=%d", &lvl)
			}
			if lvl >= int(format.LevelCut) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("format level 6 not reached: %q, %v", text, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// metric returns the value of the sample named (with labels) series on admin's /metrics.
func metric(t *testing.T, admin, series string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if name, v, ok := strings.Cut(l, " "); ok && name == series {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	t.Fatalf("%s: no %s on /metrics", admin, series)
	return 0
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x10
	return c
}
