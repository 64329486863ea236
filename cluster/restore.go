package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/format"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/tools/backupfile"
	"github.com/corral/corral/wire"
)

// POST /restore: a backup file (tools/backupfile) loaded into this, empty, ensemble
// (docs/operations.md "Backup and restore", docs/design.md §18 "Restore"). `corral restore`
// uploads its file here; there is no other restore path.
//
// The handler works in four steps, and answers with an error status before the third:
//  1. it receives the body into a spool file in dataDir, checking every record, the order, the
//     count and the SHA-256 as the bytes arrive: a truncated or corrupt body is answered 400
//     with the problem and its byte offset, and nothing is written;
//  2. it opens a session on its own client port and refuses (409) a target that holds a znode
//     besides /, /zookeeper and its fixed children, or a quota;
//  3. it answers 200 and creates every znode of the spool file in file order (parents before
//     children; many creates in flight, a child waiting for its parent) with its type and data
//     and an open ACL, through that session, so each create is the ordinary write (cross-shard
//     transactions for top-level names, quota counting, TTL checks);
//  4. it reads the spool file again and, per chunk of statChunk znodes, sets each ACL that is
//     not the open one (through the session) and then every stat in-process (setStats, the
//     code behind POST /import/stats), moving every shard's clock past them (raiseClocks).
//
// From the 200 on, the body is JSON lines (RestoreLine): one a second with the progress, and a
// last one that is either Done or carries the Error that stopped the restore half-way (what was
// created stays: restore into a fresh ensemble again). One restore runs at a time per server.

// RestoreAuthHeader carries a scheme:credentials pair (repeatable) that POST /restore adds on
// its session before it writes, as a client's addAuth: for a target whose / is not open to
// anyone, or with enforce.auth.enabled. `corral restore --auth` fills it.
const RestoreAuthHeader = "X-Corral-Auth"

// RestoreLine is one line of the answer of POST /restore.
type RestoreLine struct {
	Phase   string `json:"phase"`             // "created", "set the ACL and stat of", "restored"
	Znodes  int64  `json:"znodes"`            // done in this phase
	Total   int64  `json:"total"`             // in the file
	ACLs    int64  `json:"acls,omitempty"`    // ACLs set so far (znodes whose ACL is not the open one)
	MaxZxid int64  `json:"maxZxid,omitempty"` // the largest zxid in the file (last line)
	Done    bool   `json:"done,omitempty"`    // the last line of a restore that completed
	Error   string `json:"error,omitempty"`   // the last line of a restore that stopped
}

// ErrRestoreNotEmpty: POST /restore writes only into an empty ensemble.
var ErrRestoreNotEmpty = errors.New("the target ensemble is not empty")

const (
	// statChunk is how many znodes get their ACL and stat per round of step 4 (their data is
	// dropped: memory does not grow with the file).
	statChunk = 10_000
	// restoreConcurrency is the default number of requests in flight (?concurrency=N).
	restoreConcurrency = 64
	// restoreSession is the session timeout of the restore's session.
	restoreSession = 30 * time.Second
)

// serveRestore handles POST /restore (see above).
func (s *Node) serveRestore(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST /restore with a backup file (corral backup, GET /backup) as the body", http.StatusMethodNotAllowed)
		return
	}
	if s.table.Level() < format.LevelCut {
		w.Header().Set("Retry-After", "1") // a fresh ensemble gets there within seconds
	}
	if !s.atLevel(w, format.LevelCut, "a restore") {
		return
	}
	conc := restoreConcurrency
	if v := r.URL.Query().Get("concurrency"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 4096 {
			http.Error(w, "concurrency: a number from 1 to 4096", http.StatusBadRequest)
			return
		}
		conc = n
	}
	if s.cfg.ClientPort <= 0 {
		http.Error(w, "a restore writes through this server's plain client port (clientPort), which is not configured: use another server", http.StatusConflict)
		return
	}
	if !s.restoring.TryLock() {
		http.Error(w, "a restore is running on this server", http.StatusConflict)
		return
	}
	defer s.restoring.Unlock()
	start := time.Now()
	fail := func(code int, msg string) {
		s.metrics.restores.WithLabelValues("refused").Inc()
		s.log.Warn("restore: refused", "remote", r.RemoteAddr, "status", code, "reason", msg)
		http.Error(w, msg, code)
	}

	// 1. the body, checked, into the spool file
	spool, err := os.CreateTemp(s.cfg.DataDir, "restore-*.backup")
	if err != nil {
		fail(http.StatusInternalServerError, "a spool file for the body: "+err.Error())
		return
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	t, err := receive(io.TeeReader(r.Body, spool))
	if err != nil {
		fail(http.StatusBadRequest, err.Error()+" (nothing restored)")
		return
	}

	// 2. a session on our own client port; the target must be empty
	conn, err := s.restoreSession(r.Header.Values(RestoreAuthHeader))
	if err != nil {
		fail(http.StatusServiceUnavailable, "a session on this server's client port: "+err.Error()+" (nothing restored)")
		return
	}
	defer conn.Close()
	if err := checkEmpty(conn); err != nil {
		code := http.StatusServiceUnavailable
		if errors.Is(err, ErrRestoreNotEmpty) {
			code = http.StatusConflict
		}
		fail(code, err.Error()+" (nothing restored)")
		return
	}

	// 3. and 4., reporting progress
	s.log.Info("restore: started", "remote", r.RemoteAddr, "znodes", t.Nodes)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rs := &restore{ctx: r.Context(), conn: conn, conc: conc, s: s}
	rs.phase.Store(&phaseName{"created"})
	out := &lineWriter{w: w, rc: http.NewResponseController(w)}
	stop := rs.reportEverySecond(out, t.Nodes)
	err = rs.run(spool.Name())
	stop()
	last := RestoreLine{Phase: "restored", Znodes: rs.done.Load(), Total: t.Nodes, ACLs: rs.acls.Load(), MaxZxid: t.MaxZxid, Done: err == nil}
	if err != nil {
		last.Phase = rs.phase.Load().name
		last.Error = err.Error()
		s.metrics.restores.WithLabelValues("failed").Inc()
		s.log.Warn("restore: stopped half-way; what was created stays", "phase", last.Phase, "done", last.Znodes, "err", err)
	} else {
		s.metrics.restores.WithLabelValues("done").Inc()
		s.log.Info("restore: done", "znodes", t.Nodes, "acls", last.ACLs, "took", time.Since(start))
	}
	out.line(last)
}

// receive reads and checks a whole backup file from r.
func receive(r io.Reader) (backupfile.Trailer, error) {
	rd, err := backupfile.NewReader(r)
	if err != nil {
		return backupfile.Trailer{}, err
	}
	for {
		if _, err := rd.Next(); err == io.EOF {
			return rd.Trailer(), nil
		} else if err != nil {
			return backupfile.Trailer{}, err
		}
	}
}

// restoreSession opens a session on this server's plain client port (on loopback when it
// listens on every address) and adds auth on it.
func (s *Node) restoreSession(auth []string) (*zk.Conn, error) {
	host := s.cfg.ClientPortAddress
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(s.cfg.ClientPort))
	c, events, err := zk.Connect([]string{addr}, restoreSession, zk.WithLogInfo(false), zk.WithLogger(quietZK{}))
	if err != nil {
		return nil, err
	}
	deadline := time.After(restoreSession)
	for connected := false; !connected; {
		select {
		case ev := <-events:
			connected = ev.State == zk.StateHasSession
		case <-deadline:
			c.Close()
			return nil, fmt.Errorf("no session with %s within %s", addr, restoreSession)
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
			return nil, fmt.Errorf("%s %q: want scheme:credentials", RestoreAuthHeader, a)
		}
		if err := c.AddAuth(scheme, []byte(cred)); err != nil {
			c.Close()
			return nil, fmt.Errorf("addAuth %s: %w", scheme, err)
		}
	}
	return c, nil
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// checkEmpty refuses a target that holds a znode besides /, /zookeeper and its fixed children,
// or a quota (a child of /zookeeper/quota).
func checkEmpty(c *zk.Conn) error {
	for _, p := range []string{"/", shard.QuotaRoot} {
		kids, _, err := c.Children(p)
		if err != nil {
			return fmt.Errorf("listing %s: %w", p, err)
		}
		kids = slices.DeleteFunc(kids, func(k string) bool { return p == "/" && k == "zookeeper" })
		if len(kids) > 0 {
			slices.Sort(kids)
			return fmt.Errorf("%w: %s has %d children (%s first): restore into a fresh ensemble, or delete them first",
				ErrRestoreNotEmpty, p, len(kids), path.Join(p, kids[0]))
		}
	}
	return nil
}

type phaseName struct{ name string }

// restore is one run of steps 3 and 4 of POST /restore.
type restore struct {
	ctx  context.Context
	conn *zk.Conn
	conc int
	s    *Node

	phase atomic.Pointer[phaseName]
	done  atomic.Int64 // znodes done in this phase
	acls  atomic.Int64

	// step 3: creates in flight, by path, each closing its channel when done, so that a child
	// waits for its parent
	mu       sync.Mutex
	inflight map[string]chan struct{}
	first    error
	sem      chan struct{}
	wg       sync.WaitGroup

	chunk []*backupfile.Node // step 4
}

// run does steps 3 and 4 from the spool file.
func (r *restore) run(file string) error {
	r.sem, r.inflight = make(chan struct{}, r.conc), make(map[string]chan struct{})
	err := scan(file, r.create)
	r.wg.Wait()
	if err == nil {
		err = r.failed()
	}
	if err != nil {
		return err
	}
	r.phase.Store(&phaseName{"set the ACL and stat of"})
	r.done.Store(0)
	err = scan(file, r.collect)
	if err == nil {
		err = r.flush()
	}
	return err
}

// scan reads the spool file (checked as it was received; read through the Reader again, which
// checks it again) and calls each with every znode in order.
func scan(file string, each func(*backupfile.Node) error) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	rd, err := backupfile.NewReader(f)
	if err != nil {
		return err
	}
	for {
		n, err := rd.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := each(n); err != nil {
			return err
		}
	}
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
	if n.Path == "/" || n.Path == shard.QuotaRoot {
		r.done.Add(1)
		return nil
	}
	if err := r.failed(); err != nil {
		return err
	}
	if err := r.ctx.Err(); err != nil {
		return err
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
		if err := createNode(r.conn, n); err != nil {
			r.fail(err)
			return
		}
		r.done.Add(1)
	}()
	return nil
}

var openACL = zk.WorldACL(zk.PermAll)

// createNode creates n with its type and data and an open ACL.
func createNode(c *zk.Conn, n *backupfile.Node) error {
	var err error
	switch n.Type {
	case backupfile.Container:
		_, err = c.CreateContainer(n.Path, n.Data, zk.FlagContainer, openACL)
	case backupfile.TTL:
		_, err = c.CreateTTL(n.Path, n.Data, zk.FlagTTL, openACL, time.Duration(n.TTL)*time.Millisecond)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			// usually UNIMPLEMENTED, which go-zookeeper reports as "unknown error -6"
			return fmt.Errorf("creating the TTL node %s: %w (TTL nodes need zookeeper.extendedTypesEnabled=true in every server's zoo.cfg)", n.Path, err)
		}
	default:
		_, err = c.Create(n.Path, n.Data, 0, openACL)
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", n.Path, err)
	}
	return nil
}

// collect adds n (without its data) to the chunk of step 4, which is flushed when full.
func (r *restore) collect(n *backupfile.Node) error {
	n.Data = nil
	r.chunk = append(r.chunk, n)
	if len(r.chunk) < statChunk {
		return nil
	}
	return r.flush()
}

// flush sets the ACL of every znode of the chunk whose ACL is not the open one, then the stats
// of all of them (setACL moves aversion; the stat sets it back), then moves every shard's clock
// past them.
func (r *restore) flush() error {
	chunk := r.chunk
	r.chunk = r.chunk[:0]
	sem := make(chan struct{}, r.conc)
	var wg sync.WaitGroup
	for _, n := range chunk {
		if isOpenACL(n.ACL) {
			continue
		}
		if r.failed() != nil || r.ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			acl := make([]zk.ACL, len(n.ACL))
			for i, a := range n.ACL {
				acl[i] = zk.ACL{Perms: a.Perms, Scheme: a.ID.Scheme, ID: a.ID.ID}
			}
			if _, err := r.conn.SetACL(n.Path, acl, -1); err != nil {
				r.fail(fmt.Errorf("setting the ACL of %s: %w", n.Path, err))
				return
			}
			r.acls.Add(1)
		}()
	}
	wg.Wait()
	if err := r.failed(); err != nil {
		return err
	}
	if err := r.ctx.Err(); err != nil {
		return err
	}
	lines := make([]StatLine, len(chunk))
	for i, n := range chunk {
		lines[i] = StatLine{Path: n.Path, Czxid: n.Czxid, Mzxid: n.Mzxid, Pzxid: n.Pzxid, Ctime: n.Ctime,
			Mtime: n.Mtime, Version: n.Version, Aversion: n.Aversion, Cversion: n.Cversion}
	}
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	res := r.s.setStats(ctx, lines)
	if len(res.Failed) > 0 {
		f := res.Failed[0]
		return fmt.Errorf("setting stats: %d of %d failed, the first %s: %s", len(res.Failed), len(lines), f.Path, f.Error)
	}
	if err := r.s.raiseClocks(ctx, lines); err != nil {
		return fmt.Errorf("moving the shards' clocks past the stats: %w", err)
	}
	r.done.Add(int64(len(chunk)))
	return nil
}

func isOpenACL(acl []wire.ACL) bool {
	return len(acl) == 1 && acl[0].Perms == zk.PermAll && acl[0].ID.Scheme == "world" && acl[0].ID.ID == "anyone"
}

// reportEverySecond writes a progress line to out every second until stop is called.
func (r *restore) reportEverySecond(out *lineWriter, total int64) (stop func()) {
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
				out.line(RestoreLine{Phase: r.phase.Load().name, Znodes: r.done.Load(), Total: total, ACLs: r.acls.Load()})
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// lineWriter writes JSON lines to an HTTP answer, each flushed at once. Its user writes from
// one goroutine at a time (the reporter, then the handler after stopping it).
type lineWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (l *lineWriter) line(v RestoreLine) {
	b, _ := json.Marshal(v)
	l.w.Write(append(b, '\n'))
	l.rc.Flush()
}
