package zkimport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/cluster"
)

// Options configure one import.
type Options struct {
	From []string // source servers (host:port); or DataDir
	// DataDir (and DataLogDir, when ZooKeeper's dataLogDir is another directory) is a stopped
	// Apache ZooKeeper's data directory to read instead of a running ensemble: its newest valid
	// snapshot and later transaction logs (tools/zkdata). It also knows containers and TTL
	// nodes, which arrive as such.
	DataDir, DataLogDir string
	To                  []string // target Corral servers (host:port); unused with DryRun
	Admin               string   // a target server's admin address (host:port), for the stats; unused with DryRun
	AdminAuth           string   // admin operator credentials (user:password) for Admin; "" for none (package adminauth)
	// AdminTLS, when set, calls Admin over HTTPS with it (admin.forceHttps); nil: plain HTTP.
	AdminTLS *tls.Config
	// Path is the root of the subtree to copy (default "/": everything but /zookeeper). Its
	// missing ancestors are created in the target with null data.
	Path string
	// Auth lists scheme:credentials pairs (e.g. "digest:user:pass") added on both sessions.
	Auth     []string
	Existing Existing
	DryRun   bool
	// Concurrency is how many requests are in flight on each side (default 64).
	Concurrency int
	// Progress, when set, gets a line every second while the import runs.
	Progress io.Writer
	// SessionTimeout for both connections (default 30 s).
	SessionTimeout time.Duration
}

// Summary is what an import did.
type Summary struct {
	Read, Created, Skipped, Overwritten int64 // znodes
	Bytes                               int64 // data bytes read
	ACLs                                int64 // ACLs set (nodes whose ACL is not world:anyone:cdrwa)
	Stats                               int   // stats set
	Took                                time.Duration
}

func (s Summary) String() string {
	return fmt.Sprintf("%d znodes read (%d data bytes), %d created, %d overwritten, %d existing skipped, %d ACLs and %d stats set, in %s",
		s.Read, s.Bytes, s.Created, s.Overwritten, s.Skipped, s.ACLs, s.Stats, s.Took.Round(time.Millisecond))
}

// Run copies the tree (see the package doc). It stops at the first error, which names the
// znode; what was created before stays (run again with Skip to resume).
func Run(ctx context.Context, o Options) (Summary, error) {
	start := time.Now()
	if o.Path == "" {
		o.Path = "/"
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 64
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 30 * time.Second
	}
	if o.Path != "/" && (strings.HasSuffix(o.Path, "/") || !strings.HasPrefix(o.Path, "/") || path.Clean(o.Path) != o.Path) {
		return Summary{}, fmt.Errorf("--path %q: want an absolute znode path such as /kafka", o.Path)
	}
	if (o.DataDir == "") == (len(o.From) == 0) {
		return Summary{}, errors.New("give either source servers or a ZooKeeper data directory")
	}
	var src *zk.Conn
	var offline [][]*Node
	var err error
	if o.DataDir != "" {
		if offline, _, err = dataDirLevels(o.DataDir, o.DataLogDir, o.Path); err != nil {
			return Summary{}, fmt.Errorf("source: %w", err)
		}
	} else {
		if src, err = Connect(o.From, o.Auth, o.SessionTimeout); err != nil {
			return Summary{}, fmt.Errorf("source: %w", err)
		}
		defer src.Close()
	}
	var dst *zk.Conn
	if !o.DryRun {
		if dst, err = Connect(o.To, o.Auth, o.SessionTimeout); err != nil {
			return Summary{}, fmt.Errorf("target: %w", err)
		}
		defer dst.Close()
		if err := ensureAncestors(dst, o.Path); err != nil {
			return Summary{}, err
		}
	}
	r := &run{o: o, src: src, dst: dst}
	stop := r.reportProgress()
	if offline != nil {
		err = r.copyLevels(ctx, offline)
	} else {
		err = r.copyTree(ctx)
	}
	stop()
	if err == nil && !o.DryRun {
		if err = r.finish(ctx); err == nil {
			r.sum.Stats = len(r.stats)
		}
	}
	sum := r.summary()
	sum.Took = time.Since(start)
	return sum, err
}

// run is the state of one import.
type run struct {
	o                                                Options
	src, dst                                         *zk.Conn
	read, created, skipped, overwritten, bytes, acls atomic.Int64

	mu    sync.Mutex
	acl   []*Node            // copied nodes whose ACL is to be set
	stats []cluster.StatLine // stats of the copied nodes
	sum   Summary
}

func (r *run) summary() Summary {
	s := r.sum
	s.Read, s.Created, s.Skipped, s.Overwritten = r.read.Load(), r.created.Load(), r.skipped.Load(), r.overwritten.Load()
	s.Bytes, s.ACLs = r.bytes.Load(), r.acls.Load()
	return s
}

// copyTree reads and creates the tree level by level: every node of a level is created before
// any node of the next, so parents always exist.
func (r *run) copyTree(ctx context.Context) error {
	level := []string{r.o.Path}
	for len(level) > 0 {
		var next []string
		var mu sync.Mutex
		err := r.each(ctx, level, func(p string) error {
			n, err := readNode(r.src, p)
			if errors.Is(err, errSkip) {
				return nil
			}
			if err != nil {
				return err
			}
			r.read.Add(1)
			r.bytes.Add(int64(len(n.Data)))
			if err := r.copyNode(n); err != nil {
				return err
			}
			mu.Lock()
			for _, k := range n.Children {
				next = append(next, path.Join(p, k))
			}
			mu.Unlock()
			return nil
		})
		if err != nil {
			return err
		}
		level = next
	}
	return nil
}

// copyLevels creates nodes read from a data directory, level by level.
func (r *run) copyLevels(ctx context.Context, levels [][]*Node) error {
	for _, level := range levels {
		err := r.eachNode(ctx, level, func(n *Node) error {
			r.read.Add(1)
			r.bytes.Add(int64(len(n.Data)))
			return r.copyNode(n)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// copyNode creates n in the target and keeps what finish needs. The root "/" is not copied:
// the target's root keeps its ACL and stat.
func (r *run) copyNode(n *Node) error {
	if r.o.DryRun || n.Path == "/" {
		return nil // the target's root keeps its own ACL and stat
	}
	what, err := create(r.dst, n, r.o.Existing)
	if err != nil {
		return err
	}
	switch what {
	case skipped:
		r.skipped.Add(1)
		return nil
	case overwritten:
		r.overwritten.Add(1)
	default:
		r.created.Add(1)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !sameACL(n.ACL, openACL) || what == overwritten {
		r.acl = append(r.acl, &Node{Path: n.Path, ACL: n.ACL})
	}
	r.stats = append(r.stats, statLine(n))
	return nil
}

// finish sets the source ACLs, then the stats (setACL moves aversion; the stats set it back).
func (r *run) finish(ctx context.Context) error {
	err := r.eachNode(ctx, r.acl, func(n *Node) error {
		if _, err := r.dst.SetACL(n.Path, n.ACL, -1); err != nil {
			return fmt.Errorf("setting the ACL of %s in the target: %w", n.Path, err)
		}
		r.acls.Add(1)
		return nil
	})
	if err != nil {
		return err
	}
	return PostStats(ctx, r.o.Admin, r.o.AdminAuth, r.o.AdminTLS, r.stats)
}

// each runs f on every path with up to Concurrency calls at once and returns the first error.
func (r *run) each(ctx context.Context, paths []string, f func(string) error) error {
	return Parallel(ctx, r.o.Concurrency, paths, f)
}

func (r *run) eachNode(ctx context.Context, nodes []*Node, f func(*Node) error) error {
	return Parallel(ctx, r.o.Concurrency, nodes, f)
}

// Parallel runs f on every item with up to n calls at once and returns the first error.
func Parallel[T any](ctx context.Context, n int, items []T, f func(T) error) error {
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	var first atomic.Pointer[error]
	for _, p := range items {
		if first.Load() != nil {
			break
		}
		if err := ctx.Err(); err != nil {
			first.CompareAndSwap(nil, &err)
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(p); err != nil {
				first.CompareAndSwap(nil, &err)
			}
		}()
	}
	wg.Wait()
	if e := first.Load(); e != nil {
		return *e
	}
	return nil
}

// reportProgress writes a line every second until the returned stop is called.
func (r *run) reportProgress() (stop func()) {
	return EverySecond(r.o.Progress, func(el time.Duration) string {
		n := r.read.Load()
		return fmt.Sprintf("read %d znodes, created %d (%.0f/s, %s)", n, r.created.Load(), float64(n)/el.Seconds(), el.Round(time.Second))
	})
}

// EverySecond writes the line line returns (given the time since the call) to w every second,
// until the returned stop is called; without w it does nothing.
func EverySecond(w io.Writer, line func(elapsed time.Duration) string) (stop func()) {
	if w == nil {
		return func() {}
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintln(w, line(time.Since(start)))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// ensureAncestors creates the missing ancestors of p in the target (null data, open ACL).
func ensureAncestors(c *zk.Conn, p string) error {
	if p == "/" {
		return nil
	}
	parts := strings.Split(p[1:], "/")
	for i := 1; i < len(parts); i++ {
		a := "/" + strings.Join(parts[:i], "/")
		if _, err := c.Create(a, nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("creating the ancestor %s of %s in the target: %w", a, p, err)
		}
	}
	return nil
}

// Connect opens a session to servers and adds the auth pairs; it returns once the session is
// established.
func Connect(servers []string, auth []string, timeout time.Duration) (*zk.Conn, error) {
	if len(servers) == 0 {
		return nil, errors.New("no servers given")
	}
	c, events, err := zk.Connect(servers, timeout, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		return nil, err
	}
	deadline := time.After(timeout)
	for connected := false; !connected; {
		select {
		case ev := <-events:
			connected = ev.State == zk.StateHasSession
		case <-deadline:
			c.Close()
			return nil, fmt.Errorf("no session with %s within %s", strings.Join(servers, ","), timeout)
		}
	}
	go func() {
		for range events { // drained until Close closes the channel
		}
	}()
	for _, a := range auth {
		scheme, cred, ok := strings.Cut(a, ":")
		if !ok {
			c.Close()
			return nil, fmt.Errorf("auth %q: want scheme:credentials, e.g. digest:user:password", a)
		}
		if err := c.AddAuth(scheme, []byte(cred)); err != nil {
			c.Close()
			return nil, fmt.Errorf("adding auth %s: %w", scheme, err)
		}
	}
	return c, nil
}

// quiet drops go-zookeeper's log lines (connection attempts and the like).
type quiet struct{}

func (quiet) Printf(string, ...any) {}
