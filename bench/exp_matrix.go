package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/router"
)

// The matrix: the table a user choosing between Apache ZooKeeper and Corral asks for, each row
// measured on both targets in one run, with clients that behave like real ones (go-zookeeper,
// blocking calls; see exp_matrix_zk.go). Rows 1-9 run on one ensemble per target after the
// usual prepare and warm-up; rows 10-14 on a second, fresh ensemble, so that row 11's "before"
// is an idle server and not the heap high-water mark of the load rows (rows 12-14 share their
// sessions, exp_matrix_sessions.go). The targets' ensembles
// run side by side, each row is measured on every target before the next, and the ensembles
// not being measured are paused (matrixPart, exp_matrix_pause.go).

const (
	matrixInflight  = 32       // rows 8-10: creates in flight on the one session (--session-inflight)
	matrixSubtrees  = 8        // rows 8 and 10: top-level subtrees the creates go round-robin over
	bulkValueSize   = 100      // row 10: bytes per znode
	sessionWorkers  = 30       // row 12: goroutines opening the sessions
	sessionBufSize  = 16 << 10 // row 12: go-zookeeper buffers per session (default 1.5 MiB each way)
	rssSettle       = 2 * time.Second
	countLimit      = 15 * time.Minute // rows 10 and 12 give up after this
	housekeepingMax = 5 * time.Minute  // deleting a row's znodes
)

// Client labels of the rows.
const (
	clientGoZK   = "go-zookeeper"
	clientCorral = "corral"
	clientAuto   = "auto" // --mixed-client: go-zookeeper, but Corral's client for reads only
	clientNone   = "–"    // row 11 measures the servers, not a client
)

// MatrixRow is one row of the matrix measured on one target.
type MatrixRow struct {
	Target  string `json:"target"`
	Servers int    `json:"servers"`
	Shards  int    `json:"shards,omitempty"`
	Row     int    `json:"row"`
	Name    string `json:"name"`
	Client  string `json:"client"`
	// Metric names Value: write_p50_ms, ops_per_s, creates_per_s, seconds, kb_per_znode.
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	// P99Ms is row 1's p99 (the table shows p50 / p99).
	P99Ms float64 `json:"p99_ms,omitempty"`
	// Ops are the operations counted: in the window, or all done (rows 10 and 12).
	Ops int64 `json:"ops"`
	// Seconds is the measured window, or the total time (rows 10 and 12).
	Seconds     float64            `json:"seconds"`
	OpsPerSec   float64            `json:"ops_per_s"`
	Latency     map[string]Summary `json:"latency,omitempty"`
	Errors      int64              `json:"errors"`
	ErrorSample string             `json:"error_sample,omitempty"`
	CPU         CPUUse             `json:"cpu"`
	RSSBeforeKB []int64            `json:"rss_before_kb,omitempty"`
	RSSAfterKB  []int64            `json:"rss_after_kb,omitempty"`
	// RSSEndKB is row 11's reading at the last create of row 10, before the settle that
	// RSSAfterKB follows (what the load itself held; the row's value uses RSSAfterKB).
	RSSEndKB []int64 `json:"rss_end_kb,omitempty"`
	Note     string  `json:"note,omitempty"`
	// Rep is the run of the matrix the row belongs to, 1 to --repeat (0 in a matrix run once).
	Rep int `json:"rep,omitempty"`
	// Err says why the row has no value.
	Err string `json:"error,omitempty"`
}

// matrixSpec describes one row.
type matrixSpec struct {
	row         int
	metric      string
	unit        string // how the table shows the value: "ms" (p50 / p99), "/s", "s", "KB"
	lowerBetter bool
	label       func(c *Config) string
	// client returns the client the row uses (nil: go-zookeeper).
	client func(c *Config) string
	run    func(m *matrixRun, ctx context.Context, r *MatrixRow) error
}

var matrixSpecs = []matrixSpec{
	{row: 1, metric: "write_p50_ms", unit: "ms", lowerBetter: true,
		label: func(*Config) string { return "1 client, 1 synchronous setData at a time: p50 / p99" },
		run:   func(m *matrixRun, ctx context.Context, r *MatrixRow) error { return m.syncWrites(ctx, r, 1) }},
	{row: 2, metric: "ops_per_s", unit: "/s",
		label: func(c *Config) string {
			return fmt.Sprintf("%d clients, 1 synchronous setData at a time each", c.Clients)
		},
		run: func(m *matrixRun, ctx context.Context, r *MatrixRow) error {
			return m.syncWrites(ctx, r, m.e.cfg.Clients)
		}},
	mixedSpec(3, 10, 70, "70 % reads"),
	mixedSpec(4, 10, 90, "90 % reads"),
	mixedSpec(5, 10, 0, "writes only"),
	mixedSpec(6, 10, 100, "reads only"),
	mixedSpec(7, 100, 0, "writes only"),
	{row: 8, metric: "creates_per_s", unit: "/s",
		label: func(c *Config) string {
			return fmt.Sprintf("1 session, %d creates in flight, over %d top-level subtrees", c.SessionInflight, matrixSubtrees)
		},
		run: func(m *matrixRun, ctx context.Context, r *MatrixRow) error {
			return m.oneSessionCreates(ctx, r, subtreeNames("/m-", matrixSubtrees))
		}},
	{row: 9, metric: "creates_per_s", unit: "/s",
		label: func(c *Config) string {
			return fmt.Sprintf("1 session, %d creates in flight, under 1 top-level subtree", c.SessionInflight)
		},
		run: func(m *matrixRun, ctx context.Context, r *MatrixRow) error {
			return m.oneSessionCreates(ctx, r, []string{"/one"})
		}},
	{row: 10, metric: "seconds", unit: "s", lowerBetter: true,
		label: func(c *Config) string {
			return fmt.Sprintf("bulk load: %d creates of %d B, 1 session, %d in flight, %d subtrees: total time",
				c.ZNodes, bulkValueSize, c.SessionInflight, matrixSubtrees)
		},
		run: (*matrixRun).bulkLoad},
	{row: 11, metric: "kb_per_znode", unit: "KB", lowerBetter: true,
		label: func(*Config) string {
			return "memory: RSS growth per server per znode after row 10 (mean over servers)"
		},
		client: func(*Config) string { return clientNone },
		run:    (*matrixRun).memory},
	{row: 12, metric: "seconds", unit: "s", lowerBetter: true,
		label: func(c *Config) string {
			return fmt.Sprintf("%d sessions (%d goroutines), 1 ephemeral znode each: total time", c.Sessions, sessionWorkers)
		},
		run: (*matrixRun).sessions},
	{row: 13, metric: "server_cores", unit: "cores", lowerBetter: true,
		label: func(c *Config) string {
			return fmt.Sprintf("row 12's %d sessions held idle for %v: CPU of the servers (sum)", c.Sessions, idleHold(c))
		},
		run: func(m *matrixRun, _ context.Context, r *MatrixRow) error { return m.afterSessions(r, m.idle) }},
	{row: 14, metric: "seconds", unit: "s", lowerBetter: true,
		label: func(c *Config) string {
			return fmt.Sprintf("row 12's %d sessions closed (%d goroutines) until their ephemerals are gone: total time", c.Sessions, sessionWorkers)
		},
		run: func(m *matrixRun, _ context.Context, r *MatrixRow) error { return m.afterSessions(r, m.closing) }},
}

// matrixFresh is the first row that runs on the second, fresh ensemble.
const matrixFresh = 10

func mixedSpec(row, perClient int, readPct float64, what string) matrixSpec {
	return matrixSpec{row: row, metric: "ops_per_s", unit: "/s",
		label: func(c *Config) string {
			return fmt.Sprintf("%d clients × %d in flight, %s", c.Clients, perClient, what)
		},
		client: func(c *Config) string { return mixedClient(c.MixedClient, readPct) },
		run: func(m *matrixRun, ctx context.Context, r *MatrixRow) error {
			return m.mixed(ctx, r, perClient, readPct)
		}}
}

// mixedClient is the client of a pipelined row (3-7) at readPct under --mixed-client choice.
// auto: go-zookeeper, except for reads only, where its CPU per request (reflection-based
// encoding, one write and one channel hand-off per call) made the generator the limit on this
// 2-core machine (against Corral: 77.5k vs 154.6k reads/s with Corral's client, 0.58 vs 0.23
// generator cores, in a 3 s trial), so a server's read throughput would not show.
func mixedClient(choice string, readPct float64) string {
	if choice == clientAuto {
		if readPct >= 100 {
			return clientCorral
		}
		return clientGoZK
	}
	return choice
}

// clientOf returns the client row s uses.
func (s matrixSpec) clientOf(c *Config) string {
	if s.client == nil {
		return clientGoZK
	}
	return s.client(c)
}

// subtreeNames returns prefix0 ... prefix(n-1).
func subtreeNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// matrixRun is the state of one target's matrix.
type matrixRun struct {
	e       *env
	t       Target
	servers int
	shards  int
	addrs   []string
	c       Cluster
	// row 10's RSS readings, for row 11
	rssBefore, rssEnd, rssAfter []int64
	rssErr                      error
	bulkOps                     int64
	// row 12's sessions held idle and then closed, for rows 13 and 14
	idle, closing *MatrixRow
	afterErr      error
	// pausing while another target is measured (exp_matrix_pause.go)
	paused        bool
	probes        []string
	unpausedPeers string
}

func runMatrix(ctx context.Context, e *env) error {
	e.echoSummary = true
	var first, fresh []matrixSpec
	for _, s := range e.matrixRows() {
		if s.row < matrixFresh {
			first = append(first, s)
		} else {
			fresh = append(fresh, s)
		}
	}
	var rows []MatrixRow
	for rep := 1; rep <= e.cfg.Repeat; rep++ {
		if e.cfg.Repeat > 1 {
			e.prog.Logf("matrix run %d of %d", rep, e.cfg.Repeat)
		}
		for _, n := range e.cfg.Sizes {
			var part []MatrixRow
			if len(first) > 0 {
				part = append(part, e.matrixPart(ctx, n, first, true)...)
			}
			if len(fresh) > 0 && ctx.Err() == nil {
				part = append(part, e.matrixPart(ctx, n, fresh, false)...)
			}
			if e.cfg.Repeat > 1 {
				for i := range part {
					part[i].Rep = rep
				}
			}
			rows = append(rows, part...)
			if ctx.Err() != nil {
				return errors.Join(ctx.Err(), e.reportMatrix(rows))
			}
		}
	}
	return e.reportMatrix(rows)
}

// matrixPart measures specs on every target with n servers. It starts one fresh ensemble per
// target (one after another; with prepare, each gets the usual znodes and cluster warm-up),
// then runs each row on every target in turn before the next row: on a machine whose other
// load comes and goes, the targets' numbers for one row are then seconds to minutes apart, not
// a whole matrix apart. While a target is measured the other ensembles are paused (focus). A
// target that does not start is recorded as failed and left out; a row that fails is recorded
// (with its error) and the next one runs.
func (e *env) matrixPart(ctx context.Context, n int, specs []matrixSpec, prepare bool) []MatrixRow {
	what := fmt.Sprintf("matrix rows %d-%d with %d servers", specs[0].row, specs[len(specs)-1].row, n)
	var runs []*matrixRun
	defer func() {
		for _, m := range runs {
			e.prog.Stage("%s: stopping", m.t.Name())
			if m.paused {
				m.signal(syscall.SIGCONT) // a stopped process would not act on SIGTERM
			}
			m.c.Close()
		}
	}()
	for _, t := range e.targets {
		if ctx.Err() != nil {
			return nil
		}
		shape := e.shape(n)
		c, err := e.startCluster(ctx, t, shape)
		if err != nil {
			e.fail(t, what, err)
			continue
		}
		m := &matrixRun{e: e, t: t, servers: n, c: c, addrs: c.Addrs()}
		if t.Sharded() {
			m.shards = shape.Shards
		}
		m.probes = probePaths(m.shards)
		err = ensureNodes(ctx, m.addrs, m.probes)
		if err == nil && prepare {
			err = e.prepareAndWarm(ctx, t, c)
		}
		if err != nil {
			e.fail(t, what, err)
			c.Close()
			continue
		}
		runs = append(runs, m)
	}
	var rows []MatrixRow
	for _, s := range specs {
		for _, m := range runs {
			if ctx.Err() != nil {
				return rows
			}
			if len(runs) > 1 {
				if err := focus(ctx, runs, m); err != nil {
					rows = append(rows, m.failRow(m.newRow(s), fmt.Errorf("continuing its paused ensemble: %w", err)))
					continue
				}
			}
			r := m.runRow(ctx, s)
			if m.unpausedPeers != "" {
				r.Note = joinNotes(r.Note, m.unpausedPeers)
				m.unpausedPeers = ""
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// matrixRows returns the rows --rows selects (all without it), in order.
func (e *env) matrixRows() []matrixSpec {
	if len(e.cfg.Rows) == 0 {
		return matrixSpecs
	}
	var out []matrixSpec
	for _, s := range matrixSpecs {
		if slices.Contains(e.cfg.Rows, s.row) {
			out = append(out, s)
		}
	}
	return out
}

// newRow returns row s of m's target, not measured yet.
func (m *matrixRun) newRow(s matrixSpec) MatrixRow {
	return MatrixRow{Target: m.t.Name(), Servers: m.servers, Shards: m.shards, Row: s.row,
		Name: s.label(m.e.cfg), Metric: s.metric, Client: s.clientOf(m.e.cfg)}
}

// failRow records that row r could not be measured.
func (m *matrixRun) failRow(r MatrixRow, err error) MatrixRow {
	r.Value, r.Err = 0, err.Error()
	m.e.fail(m.t, fmt.Sprintf("matrix row %d", r.Row), err)
	return r
}

// runRow measures one row and logs it.
func (m *matrixRun) runRow(ctx context.Context, s matrixSpec) MatrixRow {
	r := m.newRow(s)
	m.e.prog.Stage("%s x%d row %d: %s", r.Target, m.servers, s.row, r.Name)
	if err := s.run(m, ctx, &r); err != nil {
		return m.failRow(r, err)
	}
	m.e.prog.Logf("%-9s x%d row %2d %-14s %s  (%s; generator %.2f cores)", r.Target, m.servers, s.row,
		s.metric, matrixCell(s, r), r.Client, r.CPU.GenCores)
	return r
}

// fill copies a load result into r.
func (r *MatrixRow) fill(res *LoadResult) {
	r.Ops, r.Seconds, r.OpsPerSec = res.Ops, res.WindowSec, res.OpsPerSec
	r.Latency, r.Errors, r.ErrorSample, r.CPU = res.Latency, res.Errors, res.ErrorSample, res.CPU
}

// payload returns n bytes of letters.
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

// syncWrites: rows 1 and 2. clients go-zookeeper sessions, one goroutine each, a synchronous
// setData of the client's own znode (prepared by prepareAndWarm) at a time.
func (m *matrixRun) syncWrites(ctx context.Context, r *MatrixRow, clients int) error {
	conns, err := dialZKMany(ctx, m.addrs, clients)
	if err != nil {
		return err
	}
	defer closeZK(conns)
	data := payload(m.e.cfg.DataSize)
	groups := m.e.cfg.Groups
	var role string
	if clients == 1 {
		role = m.server1Role(ctx)
	}
	res, err := runZKWindow(ctx, m.e.prog, r.Target+" sync setData", clients, m.e.cfg.Warmup, m.e.cfg.Duration,
		func(w int) (int, error) {
			_, err := conns[w].Set(nodePath(groups, w), data, -1)
			return kindWrite, err
		}, func() { closeZK(conns) })
	if err != nil {
		return err
	}
	r.fill(res)
	if clients == 1 {
		l := res.Latency["write"]
		r.Value, r.P99Ms = l.P50Ms, l.P99Ms
		r.Note = joinNotes(m.server1Roles(ctx, role), m.placementNote([]string{groupDir(groups, 0)}))
	} else {
		r.Value = res.OpsPerSec
	}
	return nil
}

// mixed: rows 3-7. cfg.Clients sessions with perClient requests in flight each, getData with
// probability readPct, else setData, on the session's own znode; through Corral's pipelined
// client (RunLoad, as the throughput experiment) or go-zookeeper, as mixedClient chooses.
func (m *matrixRun) mixed(ctx context.Context, r *MatrixRow, perClient int, readPct float64) error {
	cfg := m.e.cfg
	label := fmt.Sprintf("%s %d×%d %.0f%% reads", r.Target, cfg.Clients, perClient, readPct)
	if r.Client == clientCorral {
		w := m.e.workload(m.addrs, readPct, label)
		w.Outstanding = perClient
		res, err := RunLoad(ctx, w, m.e.prog)
		if err != nil {
			return err
		}
		r.fill(res)
		r.Value = res.OpsPerSec
		return nil
	}
	conns, err := dialZKMany(ctx, m.addrs, cfg.Clients)
	if err != nil {
		return err
	}
	defer closeZK(conns)
	data := payload(cfg.DataSize)
	workers := cfg.Clients * perClient
	rngs := make([]*rand.Rand, workers)
	for w := range rngs {
		rngs[w] = rand.New(rand.NewPCG(uint64(w), 7))
	}
	res, err := runZKWindow(ctx, m.e.prog, label, workers, cfg.Warmup, cfg.Duration,
		func(w int) (int, error) {
			ci := w / perClient
			path := nodePath(cfg.Groups, ci)
			if rngs[w].Float64()*100 < readPct {
				got, _, err := conns[ci].Get(path)
				if err == nil && len(got) != len(data) {
					err = errShortRead
				}
				return kindRead, err
			}
			_, err := conns[ci].Set(path, data, -1)
			return kindWrite, err
		}, func() { closeZK(conns) })
	if err != nil {
		return err
	}
	r.fill(res)
	r.Value = res.OpsPerSec
	return nil
}

var openACL = zk.WorldACL(zk.PermAll)

// createdPaths lists, per parent, the paths parents[i mod len]/n-i for i < n: the names the
// single-session create rows give their znodes.
func createdPaths(parents []string, n int64) [][]string {
	lists := make([][]string, len(parents))
	for i := int64(0); i < n; i++ {
		p := int(i % int64(len(parents)))
		lists[p] = append(lists[p], parents[p]+"/n-"+strconv.FormatInt(i, 10))
	}
	return lists
}

// ensureNodes creates each path (persistent, empty) unless it exists.
func ensureNodes(ctx context.Context, addrs []string, paths []string) error {
	for _, p := range paths {
		if err := ensureNode(ctx, addrs, p); err != nil {
			return err
		}
	}
	return nil
}

// oneSessionCreates: rows 8 and 9. One go-zookeeper session shared by cfg.SessionInflight goroutines,
// each creating 1 KiB znodes one at a time, round-robin over parents. Afterwards the created
// znodes and the parents are deleted, so that the next rows start from the same tree.
func (m *matrixRun) oneSessionCreates(ctx context.Context, r *MatrixRow, parents []string) error {
	if err := ensureNodes(ctx, m.addrs, parents); err != nil {
		return err
	}
	conn, err := dialZK(ctx, m.addrs[0], 0)
	if err != nil {
		return err
	}
	var next atomic.Int64
	data := payload(m.e.cfg.DataSize)
	role := m.server1Role(ctx)
	res, err := runZKWindow(ctx, m.e.prog, r.Target+" creates, 1 session", m.e.cfg.SessionInflight, m.e.cfg.Warmup, m.e.cfg.Duration,
		func(int) (int, error) {
			i := next.Add(1) - 1
			_, err := conn.Create(parents[i%int64(len(parents))]+"/n-"+strconv.FormatInt(i, 10), data, 0, openACL)
			return kindCreate, err
		}, conn.Close)
	conn.Close()
	if err != nil {
		return err
	}
	r.fill(res)
	r.Value = res.OpsPerSec
	r.Note = joinNotes(m.server1Roles(ctx, role), m.placementNote(parents))
	m.e.prog.Stage("%s x%d row %d: deleting %d znodes", r.Target, m.servers, r.Row, next.Load())
	hctx, cancel := context.WithTimeout(ctx, housekeepingMax)
	defer cancel()
	err = deleteNodes(hctx, m.addrs, createdPaths(parents, next.Load()))
	if err == nil {
		err = deleteNodes(hctx, m.addrs, [][]string{parents})
	}
	if err != nil && ctx.Err() == nil {
		// The row was measured; the rows after it run on a fuller tree.
		m.e.fail(m.t, fmt.Sprintf("matrix row %d: deleting its znodes afterwards", r.Row), err)
		r.Note = joinNotes(r.Note, "deleting its znodes afterwards failed")
	}
	return ctx.Err()
}

// placementNote says which of Corral's data shards the top-level subtrees hash to (hash
// placement, router.TopLevelShard); empty for an unsharded target.
func (m *matrixRun) placementNote(parents []string) string {
	if m.shards <= 1 {
		return ""
	}
	ids := make([]uint64, m.shards) // Raft group ids as /shards lists them: 1 is the meta shard
	for i := range ids {
		ids[i] = uint64(i + 2)
	}
	var parts []string
	used := map[uint64]bool{}
	for _, p := range parents {
		s := router.TopLevelShard(strings.TrimPrefix(p, "/"), ids)
		used[s] = true
		parts = append(parts, fmt.Sprintf("%s→%d", p, s))
	}
	return fmt.Sprintf("data shards (ids 2-%d) by hash: %s (%d of %d used)", m.shards+1, strings.Join(parts, " "),
		len(used), m.shards)
}

// server1Role says what the server the single-session rows talk to (index 0) is: ZooKeeper's
// srvr Mode, or how many shards it leads in Corral.
func (m *matrixRun) server1Role(ctx context.Context) string {
	if d, ok := m.c.(interface {
		Describe(context.Context, int) string
	}); ok {
		if s := d.Describe(ctx, 0); s != "" {
			return "server 1 " + s
		}
	}
	if mode, err := srvrMode(ctx, m.addrs[0]); err == nil {
		return "server 1 is a " + mode
	}
	return ""
}

// server1Roles is server1Role at the end of a row, with what it was at the start (start) when
// that differs: in Corral, a server that writes nearly all of a shard takes its leadership over
// (docs/design.md §15, "Leaders follow the writes").
func (m *matrixRun) server1Roles(ctx context.Context, start string) string {
	end := m.server1Role(ctx)
	if start == "" || start == end {
		return end
	}
	return fmt.Sprintf("at the start of the row %s; at its end %s", start, end)
}

// joinNotes joins the non-empty notes with "; ".
func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}

// pids returns the server processes' ids, if the target knows them.
func (m *matrixRun) pids() ([]int, error) {
	pc, ok := m.c.(interface{ Pid(int) int })
	if !ok {
		return nil, fmt.Errorf("the server processes of a %s ensemble are not known to the benchmark", m.t.Name())
	}
	out := make([]int, len(m.addrs))
	for i := range out {
		if out[i] = pc.Pid(i); out[i] <= 0 {
			return nil, fmt.Errorf("server %d is not running", i+1)
		}
	}
	return out, nil
}

// rss reads every server's VmRSS (KiB).
func (m *matrixRun) rss() ([]int64, error) {
	pids, err := m.pids()
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(pids))
	for i, pid := range pids {
		if out[i], err = readRSS(pid); err != nil {
			return nil, fmt.Errorf("server %d: %w", i+1, err)
		}
	}
	return out, nil
}

// bulkLoad: row 10. One go-zookeeper session, cfg.SessionInflight goroutines sharing cfg.ZNodes
// creates of bulkValueSize bytes round-robin over matrixSubtrees subtrees; the value is the
// total time. Before it, a --warmup of the same load into /bulk-warm (kept: it is part of
// the "before" of row 11); around it, the servers' RSS for row 11.
func (m *matrixRun) bulkLoad(ctx context.Context, r *MatrixRow) error {
	m.rssErr = errors.New("row 10 did not run")
	parents := subtreeNames("/bulk-", matrixSubtrees)
	if err := ensureNodes(ctx, m.addrs, append([]string{"/bulk-warm"}, parents...)); err != nil {
		return err
	}
	conn, err := dialZK(ctx, m.addrs[0], 0)
	if err != nil {
		return err
	}
	defer conn.Close()
	data := payload(bulkValueSize)
	if w := m.e.cfg.Warmup; w > 0 {
		var seq atomic.Int64
		_, err := runZKWindow(ctx, m.e.prog, r.Target+" bulk warm-up", m.e.cfg.SessionInflight, 0, w,
			func(int) (int, error) {
				_, err := conn.Create("/bulk-warm/n-"+strconv.FormatInt(seq.Add(1)-1, 10), data, 0, openACL)
				return kindCreate, err
			}, conn.Close)
		if err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	role := m.server1Role(ctx)
	// Both readings at rest: the one before, like the one after, rssSettle after the last
	// write (here the warm-up's), so that a server that gives memory back when its load ends
	// has done so in both, or in neither.
	if sleepUntil(ctx, time.Now().Add(rssSettle)) {
		return ctx.Err()
	}
	before, rssErr := m.rss()
	res, err := runZKCount(ctx, m.e.prog, r.Target+" bulk load", m.e.cfg.SessionInflight, m.e.cfg.ZNodes, countLimit,
		func(_ context.Context, _, i int) (int, error) {
			_, err := conn.Create(parents[i%len(parents)]+"/n-"+strconv.Itoa(i), data, 0, openACL)
			return kindCreate, err
		}, conn.Close)
	if res == nil {
		return err
	}
	// A load that gave up still leaves its znodes: row 11 is measured over those.
	r.fill(res)
	r.Value = res.WindowSec
	r.Note = joinNotes(m.server1Roles(ctx, role), m.placementNote(parents))
	m.bulkOps = res.Ops
	var end []int64
	if rssErr == nil {
		end, rssErr = m.rss()
	}
	if rssErr == nil && !sleepUntil(ctx, time.Now().Add(rssSettle)) {
		var after []int64
		if after, rssErr = m.rss(); rssErr == nil {
			m.rssBefore, m.rssEnd, m.rssAfter = before, end, after
		}
	}
	m.rssErr = rssErr
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// memory: row 11, from row 10's readings: (after − before) / znodes created, per server, in
// KiB; the value is the mean over the servers.
func (m *matrixRun) memory(_ context.Context, r *MatrixRow) error {
	if m.rssErr != nil {
		return fmt.Errorf("no RSS readings: %w", m.rssErr)
	}
	if m.bulkOps <= 0 {
		return fmt.Errorf("row 10 created no znodes")
	}
	r.RSSBeforeKB, r.RSSEndKB, r.RSSAfterKB, r.Ops = m.rssBefore, m.rssEnd, m.rssAfter, m.bulkOps
	var sum float64
	if m.bulkOps < int64(m.e.cfg.ZNodes) {
		r.Note = fmt.Sprintf("row 10 created only %d of %d znodes; ", m.bulkOps, m.e.cfg.ZNodes)
	}
	per := make([]string, len(m.rssBefore))
	for i := range m.rssBefore {
		kb := float64(m.rssAfter[i]-m.rssBefore[i]) / float64(m.bulkOps)
		sum += kb
		per[i] = fmt.Sprintf("%.0f→%.0f→%.0f MiB", float64(m.rssBefore[i])/1024, float64(m.rssEnd[i])/1024,
			float64(m.rssAfter[i])/1024)
	}
	r.Value = sum / float64(len(m.rssBefore))
	r.Note += fmt.Sprintf("RSS per server before row 10 → at its last create → %v later: ", rssSettle) + strings.Join(per, ", ")
	return nil
}
