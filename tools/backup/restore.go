package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/tools/backupfile"
	"github.com/corral/corral/tools/zkdata"
	"github.com/corral/corral/tools/zkimport"
)

// ErrNotEmpty: the target ensemble holds znodes; a restore writes only into an empty one.
var ErrNotEmpty = errors.New("the target ensemble is not empty")

// statChunk is how many znodes get their ACL and stat per round of the third pass.
const statChunk = 10_000

// Restore loads o.File into the empty ensemble at o.To (see the package doc). It checks the
// whole file before it writes anything; a failure half-way leaves what was created (restore
// into a fresh ensemble again).
func Restore(ctx context.Context, o Options) (Summary, error) {
	start := time.Now()
	if o.Concurrency <= 0 {
		o.Concurrency = 64
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 30 * time.Second
	}
	c := &counter{what: "checked"}
	stop := c.progress(o.Progress)
	sum, err := scan(o.File, c, nil)
	stop()
	if err != nil {
		return Summary{}, fmt.Errorf("%s: %w (nothing restored)", o.File, err)
	}
	conn, err := zkimport.Connect(o.To, o.Auth, o.SessionTimeout)
	if err != nil {
		return sum, fmt.Errorf("target: %w", err)
	}
	defer conn.Close()
	if err := checkEmpty(conn); err != nil {
		return sum, err
	}
	r := &restore{ctx: ctx, o: o, conn: conn}
	c = &counter{what: "created"}
	stop = c.progress(o.Progress)
	_, err = scan(o.File, c, r.create)
	if err == nil {
		err = r.wait()
	}
	stop()
	if err != nil {
		return sum, err
	}
	c = &counter{what: "set the ACL and stat of"}
	stop = c.progress(o.Progress)
	_, err = scan(o.File, c, r.collect)
	if err == nil {
		err = r.flush(ctx)
	}
	stop()
	sum.ACLs = r.acls.Load()
	sum.Took = time.Since(start)
	return sum, err
}

// scan reads the file, checking it, and calls each (when not nil) with every znode in order.
func scan(file string, c *counter, each func(*backupfile.Node) error) (Summary, error) {
	f, err := os.Open(file)
	if err != nil {
		return Summary{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Summary{}, err
	}
	rd, err := backupfile.NewReader(countingReader{f, &c.bytes})
	if err != nil {
		return Summary{}, err
	}
	for {
		n, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Summary{}, err
		}
		if each != nil {
			if err := each(n); err != nil {
				return Summary{}, err
			}
		}
		c.nodes.Add(1)
	}
	t := rd.Trailer()
	return Summary{Znodes: t.Nodes, MaxZxid: t.MaxZxid, Shards: len(rd.Header().Shards), Bytes: fi.Size()}, nil
}

// checkEmpty refuses a target that holds a znode besides /, /zookeeper and its fixed children,
// or a quota (a child of /zookeeper/quota).
func checkEmpty(c *zk.Conn) error {
	for _, p := range []string{"/", quotaRoot} {
		kids, _, err := c.Children(p)
		if err != nil {
			return fmt.Errorf("target: listing %s: %w", p, err)
		}
		kids = slices.DeleteFunc(kids, func(k string) bool { return p == "/" && k == "zookeeper" })
		if len(kids) > 0 {
			slices.Sort(kids)
			return fmt.Errorf("%w: %s has %d children (%s first): restore into a fresh ensemble, or delete them first",
				ErrNotEmpty, p, len(kids), path.Join(p, kids[0]))
		}
	}
	return nil
}

// quotaRoot is ZooKeeper's /zookeeper/quota: every ensemble has it; a backup holds it (its stat)
// and the quota nodes below it.
const quotaRoot = "/zookeeper/quota"

// restore is the state of one restore's second and third passes.
type restore struct {
	ctx  context.Context
	o    Options
	conn *zk.Conn

	// second pass: creates in flight, by path, each closing its channel when done, so that a
	// child waits for its parent
	mu       sync.Mutex
	inflight map[string]chan struct{}
	sem      chan struct{}
	wg       sync.WaitGroup
	first    error

	// third pass: the chunk of znodes whose ACL and stat are to be set
	chunk []*backupfile.Node
	acls  atomic.Int64
}

func (r *restore) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first
}

func (r *restore) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first == nil {
		r.first = err
	}
}

// create starts the creation of n (the root and /zookeeper/quota exist already) once its parent
// exists.
func (r *restore) create(n *backupfile.Node) error {
	if n.Path == "/" || n.Path == quotaRoot {
		return nil
	}
	if err := r.failed(); err != nil {
		return err
	}
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if r.sem == nil {
		r.sem, r.inflight = make(chan struct{}, r.o.Concurrency), make(map[string]chan struct{})
	}
	r.sem <- struct{}{}
	done := make(chan struct{})
	r.mu.Lock()
	parent := r.inflight[path.Dir(n.Path)]
	r.inflight[n.Path] = done
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer func() {
			r.mu.Lock()
			delete(r.inflight, n.Path)
			r.mu.Unlock()
			close(done)
			<-r.sem
			r.wg.Done()
		}()
		if parent != nil {
			<-parent
		}
		if r.failed() != nil {
			return
		}
		if err := zkimport.CreateNew(r.conn, importNode(n)); err != nil {
			r.fail(err)
		}
	}()
	return nil
}

// wait waits for every create and returns the first error.
func (r *restore) wait() error {
	r.wg.Wait()
	return r.failed()
}

// collect adds n to the chunk of the third pass, which is flushed when full.
func (r *restore) collect(n *backupfile.Node) error {
	r.chunk = append(r.chunk, n)
	if len(r.chunk) < statChunk {
		return nil
	}
	return r.flush(r.ctx)
}

// flush sets the ACL of every znode of the chunk whose ACL is not the open one, then the stats
// of all of them (setACL moves aversion; the stat sets it back).
func (r *restore) flush(ctx context.Context) error {
	chunk := r.chunk
	r.chunk = r.chunk[:0]
	var set []*backupfile.Node
	for _, n := range chunk {
		if !openACL(n) {
			set = append(set, n)
		}
	}
	err := zkimport.Parallel(ctx, r.o.Concurrency, set, func(n *backupfile.Node) error {
		if _, err := r.conn.SetACL(n.Path, importNode(n).ACL, -1); err != nil {
			return fmt.Errorf("setting the ACL of %s: %w", n.Path, err)
		}
		r.acls.Add(1)
		return nil
	})
	if err != nil {
		return err
	}
	lines := make([]cluster.StatLine, len(chunk))
	for i, n := range chunk {
		lines[i] = cluster.StatLine{Path: n.Path, Czxid: n.Czxid, Mzxid: n.Mzxid, Pzxid: n.Pzxid, Ctime: n.Ctime,
			Mtime: n.Mtime, Version: n.Version, Aversion: n.Aversion, Cversion: n.Cversion}
	}
	return zkimport.PostStats(ctx, r.o.Admin, r.o.AdminAuth, r.o.AdminTLS, lines)
}

func openACL(n *backupfile.Node) bool {
	return len(n.ACL) == 1 && n.ACL[0].Perms == zk.PermAll && n.ACL[0].ID.Scheme == "world" && n.ACL[0].ID.ID == "anyone"
}

// importNode is n as zkimport creates it: path, data, type, ACL.
func importNode(n *backupfile.Node) *zkimport.Node {
	in := &zkimport.Node{Path: n.Path, Data: n.Data, TTL: n.TTL}
	switch n.Type {
	case backupfile.Container:
		in.Kind = zkdata.Container
	case backupfile.TTL:
		in.Kind = zkdata.TTL
	}
	for _, a := range n.ACL {
		in.ACL = append(in.ACL, zk.ACL{Perms: a.Perms, Scheme: a.ID.Scheme, ID: a.ID.ID})
	}
	return in
}
