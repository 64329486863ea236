package zkimport

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/corralproc"
)

// python is the interpreter that has kazoo (Debian's python3-kazoo, installed by make deps).
const python = "/usr/bin/python3"

// TestImportKazooTree is the moving-in case as an application leaves it: kazoo
// (testdata/kazoo_tree.py) builds a tree in Apache ZooKeeper 3.8 with its own calls and recipes
// (binary and empty data, digest ACLs, a Queue with a gap, a Lock, a Counter, a Party, an
// ephemeral, rewritten data and ACLs, five top-level subtrees, over 3,000 znodes) and keeps its
// session open. The tree is imported live into a 3-server Corral ensemble (4 data shards) and
// compared with ZooKeeper's, stat included; then ZooKeeper is stopped with the session's
// ephemerals still in its data directory, the directory is imported into a second, fresh
// 3-server ensemble, and the two Corral trees must be equal in every znode, stat included, and
// give the next sequential child of the queue the same name as ZooKeeper would.
func TestImportKazooTree(t *testing.T) {
	if out, err := exec.Command(python, "-c", "import kazoo.client").CombinedOutput(); err != nil && !testing.Short() {
		t.Fatalf("kazoo is not importable by %s (%v: %s); %s", python, err, bytes.TrimSpace(out), apachezk.InstallHint)
	}
	co := corralproc.Options{Servers: 3, Shards: 4, Config: map[string]string{"corral.placement": "hash"}}
	ctx, src, live := startBoth(t, apachezk.Options{Config: map[string]string{"snapCount": "1000"}}, co)

	builder := exec.CommandContext(ctx, python, filepath.Join("testdata", "kazoo_tree.py"), strings.Join(src.Addrs(), ","))
	stdin, err := builder.StdinPipe()
	must(t, err)
	stdout, err := builder.StdoutPipe()
	must(t, err)
	var stderr bytes.Buffer
	builder.Stderr = &stderr
	must(t, builder.Start())
	defer func() {
		stdin.Close()
		builder.Process.Kill() // ZooKeeper is gone by then: kazoo would retry its lock release
		builder.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("kazoo_tree.py: %q, %v\n%s", line, err, stderr.String())
	}

	auth := []string{"digest:user:pass"}
	sum, err := Run(ctx, Options{From: src.Addrs(), To: live.Addrs(), Admin: live.AdminAddr(0), Auth: auth})
	if err != nil {
		t.Fatalf("live import: %v", err)
	}
	t.Logf("live import: %s", sum)
	zc, lc := dial(t, src.Addrs()), dial(t, live.Addrs())
	defer zc.Close()
	defer lc.Close()
	for _, c := range []*zk.Conn{zc, lc} {
		must(t, c.AddAuth("digest", []byte("user:pass")))
	}
	zkTree, liveTree := snapshot(t, zc), snapshot(t, lc)
	compared := sameTrees(t, zkTree, liveTree)
	if compared < 3000 || sum.Created != int64(compared) {
		t.Fatalf("compared %d znodes with ZooKeeper's, the live import created %d", compared, sum.Created)
	}
	ephemerals := 0
	for p, n := range zkTree {
		if n.stat.EphemeralOwner != 0 && strings.HasPrefix(p, "/svc/") {
			ephemerals++
		}
	}
	if ephemerals != 1 {
		t.Fatalf("ZooKeeper holds %d ephemerals under /svc, want kazoo's session's one", ephemerals)
	}
	if t.Failed() {
		return
	}

	// Offline: ZooKeeper stops with kazoo's session open, so its ephemerals are in the data
	// directory; they are not imported.
	if err := src.Stop(0); err != nil {
		t.Fatal(err)
	}
	off, err := corralproc.Start(ctx, co)
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	sum, err = Run(ctx, Options{DataDir: filepath.Join(src.ServerDir(0), "data"), To: off.Addrs(), Admin: off.AdminAddr(0)})
	if err != nil {
		t.Fatalf("offline import: %v", err)
	}
	t.Logf("offline import: %s", sum)
	oc := dial(t, off.Addrs())
	defer oc.Close()
	must(t, oc.AddAuth("digest", []byte("user:pass")))
	if n := sameTrees(t, liveTree, snapshot(t, oc)); n != compared {
		t.Fatalf("the offline import holds %d znodes, the live one %d", n, compared)
	}

	// The next entry of kazoo's queue gets the same name on both Corral ensembles.
	a, err := lc.Create("/jobs/entry-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	must(t, err)
	b, err := oc.Create("/jobs/entry-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	must(t, err)
	if a != b || a != "/jobs/entry-0000000006" {
		t.Fatalf("next queue entry: live import %s, offline import %s, want /jobs/entry-0000000006", a, b)
	}
}

// znode is what a tree snapshot holds of one znode.
type znode struct {
	data []byte
	acl  []zk.ACL
	stat zk.Stat
	kids []string
}

// snapshot reads every znode of c's tree (/zookeeper excluded) with up to 32 requests in
// flight (go-zookeeper pipelines concurrent calls on one connection).
func snapshot(t *testing.T, c *zk.Conn) map[string]znode {
	t.Helper()
	out := map[string]znode{}
	var mu sync.Mutex
	var firstErr error
	level := []string{"/"}
	for len(level) > 0 {
		var next []string
		var wg sync.WaitGroup
		sem := make(chan struct{}, 32)
		for _, p := range level {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				data, st, err := c.Get(p)
				var acl []zk.ACL
				var kids []string
				if err == nil {
					acl, _, err = c.GetACL(p)
				}
				if err == nil {
					kids, _, err = c.Children(p)
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					firstErr = cmp.Or(firstErr, fmt.Errorf("%s: %w", p, err))
					return
				}
				out[p] = znode{data: data, acl: acl, stat: *st, kids: sorted(kids)}
				for _, k := range kids {
					if q := path.Join(p, k); q != "/zookeeper" {
						next = append(next, q)
					}
				}
			}()
		}
		wg.Wait()
		level = next
	}
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	delete(out, "/")
	return out
}

// sameTrees checks that a and b hold the same znodes with the same data, ACL and stat, after
// dropping from a every ephemeral and counting each parent's ephemeral children as deleted
// (the import copies no ephemeral: a parent's child count is one fewer, its cversion as if the
// ephemeral had been deleted and never created, i.e. one more per ephemeral than the stored
// count gives clients: 2 × stored − children). It returns how many znodes it compared.
func sameTrees(t *testing.T, a, b map[string]znode) int {
	t.Helper()
	eph := map[string]int32{}
	for p, n := range a {
		if n.stat.EphemeralOwner != 0 {
			eph[path.Dir(p)]++
		}
	}
	n := 0
	for p, x := range a {
		if x.stat.EphemeralOwner != 0 {
			if _, ok := b[p]; ok {
				t.Errorf("%s: an ephemeral was imported", p)
			}
			continue
		}
		n++
		y, ok := b[p]
		if !ok {
			t.Errorf("%s: missing", p)
			continue
		}
		if !bytes.Equal(x.data, y.data) || (x.data == nil) != (y.data == nil) {
			t.Errorf("%s: data %q (nil %v), want %q (nil %v)", p, y.data, y.data == nil, x.data, x.data == nil)
		}
		if !sameACL(x.acl, y.acl) {
			t.Errorf("%s: ACL %v, want %v", p, y.acl, x.acl)
		}
		want := x.stat
		want.NumChildren -= eph[p]
		want.Cversion += eph[p]
		if y.stat != want {
			t.Errorf("%s: stat\n %+v, want\n %+v", p, y.stat, want)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			t.Errorf("%s: not in the source", p)
		}
	}
	return n
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
