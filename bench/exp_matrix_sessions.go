package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Rows 12-14: many sessions, each with one ephemeral znode. Row 12 opens them; the same
// sessions are then held idle (row 13: what the servers spend on sessions that only ping) and
// closed (row 14: until every ephemeral is gone). The three are measured in one go per target,
// since the sessions cannot survive their ensemble being paused while another target is
// measured; rows 13 and 14 report what row 12's run recorded, as row 11 reports row 10's.

const (
	idleSettle    = 2 * time.Second       // row 13: quiet time after the last session opened
	closeGaveUp   = time.Second           // go-zookeeper's Close stops waiting for the reply after this
	emptyPoll     = 20 * time.Millisecond // row 14: how often the ephemerals are counted
	procClockTick = 100                   // USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s
)

// idleHold is how long row 13 holds the sessions idle: twice the measured window, so that each
// session pings (go-zookeeper: every third of its 10 s timeout) several times in a full run.
func idleHold(c *Config) time.Duration { return 2 * c.Duration }

// wantsRow reports whether the run measures row n.
func (e *env) wantsRow(n int) bool { return len(e.cfg.Rows) == 0 || slices.Contains(e.cfg.Rows, n) }

// sessions: row 12. sessionWorkers goroutines open cfg.Sessions go-zookeeper sessions (session
// i with server i mod n), each creating one ephemeral znode under /sessions; the value is the
// total time. Every session stays open until all are done (then the children of /sessions are
// counted); then, for rows 13 and 14, they are held idle and closed.
func (m *matrixRun) sessions(ctx context.Context, r *MatrixRow) error {
	const parent = "/sessions"
	m.idle, m.closing, m.afterErr = nil, nil, errors.New("row 12 did not run to its end")
	if err := ensureNode(ctx, m.addrs, parent); err != nil {
		return err
	}
	var (
		mu    sync.Mutex
		conns []*zk.Conn
	)
	all := func() []*zk.Conn { mu.Lock(); defer mu.Unlock(); return append([]*zk.Conn(nil), conns...) }
	defer func() { closeZK(all()) }()
	n := m.e.cfg.Sessions
	res, err := runZKCount(ctx, m.e.prog, r.Target+" sessions", sessionWorkers, n, countLimit,
		func(ctx context.Context, _, i int) (int, error) {
			c, err := dialZK(ctx, m.addrs[i%len(m.addrs)], sessionBufSize)
			if err != nil {
				return kindCreate, err
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			_, err = c.Create(parent+"/s-"+strconv.Itoa(i), nil, zk.FlagEphemeral, openACL)
			return kindCreate, err
		}, func() { closeZK(all()) })
	if err != nil {
		return err
	}
	r.fill(res)
	r.Value = res.WindowSec
	// Count with a session of its own: the list of children is larger than the row's sessions'
	// 16 KiB buffers.
	counter, err := dialZK(ctx, m.addrs[0], 0)
	if err != nil {
		return fmt.Errorf("counting the ephemeral znodes: %w", err)
	}
	defer counter.Close()
	kids, _, err := counter.Children(parent)
	switch {
	case err != nil:
		return fmt.Errorf("counting the ephemeral znodes: %w", err)
	case int64(len(kids)) != res.Ops:
		return fmt.Errorf("%d ephemeral znodes under %s, %d creates succeeded", len(kids), parent, res.Ops)
	}
	r.Note = fmt.Sprintf("%d ephemeral znodes counted under %s with all sessions open", len(kids), parent)
	if m.e.wantsRow(13) || m.e.wantsRow(14) {
		m.holdAndClose(ctx, all(), counter, parent)
	}
	return nil
}

// afterSessions: rows 13 and 14, from what row 12's run recorded.
func (m *matrixRun) afterSessions(r *MatrixRow, got *MatrixRow) error {
	if got == nil {
		return m.afterErr
	}
	name, metric, client := r.Name, r.Metric, r.Client
	*r = *got
	r.Name, r.Metric, r.Client = name, metric, client
	if r.Err != "" {
		return errors.New(r.Err)
	}
	return nil
}

// holdAndClose measures rows 13 and 14 on row 12's open sessions (conns; every ephemeral is
// under parent, counted over counter, a session of its own).
func (m *matrixRun) holdAndClose(ctx context.Context, conns []*zk.Conn, counter *zk.Conn, parent string) {
	// Their names come from their specs when rows 13 and 14 report them (afterSessions).
	idle := MatrixRow{Target: m.t.Name(), Servers: m.servers, Shards: m.shards, Row: 13}
	closing := MatrixRow{Target: m.t.Name(), Servers: m.servers, Shards: m.shards, Row: 14}
	if err := m.holdIdle(ctx, &idle, len(conns)); err != nil {
		idle.Err = err.Error()
	}
	m.idle = &idle
	if err := m.closeAll(ctx, &closing, conns, counter, parent); err != nil {
		closing.Err = err.Error()
	}
	m.closing = &closing
}

// holdIdle: row 13. After idleSettle, the servers' CPU time over idleHold while the sessions
// only ping, summed over the servers, in cores.
func (m *matrixRun) holdIdle(ctx context.Context, r *MatrixRow, sessions int) error {
	pids, err := m.pids()
	if err != nil {
		return err
	}
	m.e.prog.Stage("%s x%d row 13: holding %d sessions idle", r.Target, m.servers, sessions)
	if sleepUntil(ctx, time.Now().Add(idleSettle)) {
		return ctx.Err()
	}
	before, err := procCPUs(pids)
	if err != nil {
		return err
	}
	a := sampleCPU()
	if sleepUntil(ctx, a.at.Add(idleHold(m.e.cfg))) {
		return ctx.Err()
	}
	after, err := procCPUs(pids)
	if err != nil {
		return err
	}
	b := sampleCPU()
	wall := b.at.Sub(a.at)
	per := make([]string, len(pids))
	var sum time.Duration
	for i := range pids {
		d := after[i] - before[i]
		sum += d
		per[i] = ff(d.Seconds()/wall.Seconds(), 2)
	}
	r.Value = sum.Seconds() / wall.Seconds()
	r.Ops, r.Seconds, r.CPU = int64(sessions), wall.Seconds(), cpuBetween(a, b)
	r.Note = fmt.Sprintf("%d sessions open, each with its ephemeral znode; cores per server: %s", sessions, strings.Join(per, ", "))
	return nil
}

// closeAll: row 14. sessionWorkers goroutines close the sessions (go-zookeeper's Close waits
// for the closeSession reply, at most closeGaveUp); the value is the time from the first close
// until every close returned and no ephemeral znode is left under parent. A close that gave
// up waiting counts as an error: the session then ended some other way.
func (m *matrixRun) closeAll(ctx context.Context, r *MatrixRow, conns []*zk.Conn, counter *zk.Conn, parent string) error {
	m.e.prog.Stage("%s x%d row 14: closing %d sessions", r.Target, m.servers, len(conns))
	t0 := time.Now()
	res, err := runZKCount(ctx, m.e.prog, r.Target+" closes", sessionWorkers, len(conns), countLimit,
		func(_ context.Context, _, i int) (int, error) {
			start := time.Now()
			conns[i].Close()
			if time.Since(start) >= closeGaveUp {
				return kindClose, fmt.Errorf("no closeSession reply within %v", closeGaveUp)
			}
			return kindClose, nil
		}, func() {})
	if err != nil {
		return err
	}
	closed := time.Since(t0)
	left := -1
	for time.Since(t0) < countLimit {
		kids, _, err := counter.Children(parent)
		if err != nil {
			return fmt.Errorf("counting the ephemeral znodes left: %w", err)
		}
		if left = len(kids); left == 0 {
			break
		}
		if sleepUntil(ctx, time.Now().Add(emptyPoll)) {
			return ctx.Err()
		}
	}
	total := time.Since(t0)
	r.fill(res)
	r.Value, r.Seconds = total.Seconds(), total.Seconds()
	if left != 0 {
		return fmt.Errorf("%w: %d ephemeral znodes still under %s after %v", errGaveUp, left, parent, countLimit)
	}
	r.Note = fmt.Sprintf("every close returned after %.2f s, the last ephemeral was gone after %.2f s", closed.Seconds(), total.Seconds())
	return nil
}

// procCPUs returns each process's CPU time so far (user + system), from /proc/<pid>/stat.
func procCPUs(pids []int) ([]time.Duration, error) {
	out := make([]time.Duration, len(pids))
	for i, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return nil, err
		}
		// The command name (field 2) is in parentheses and may hold spaces; fields 14 and 15
		// (utime, stime) are the 12th and 13th after it.
		s := string(b)
		fs := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fs) < 13 {
			return nil, fmt.Errorf("pid %d: short /proc stat line", pid)
		}
		var ticks int64
		for _, f := range fs[11:13] {
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("pid %d: /proc stat: %w", pid, err)
			}
			ticks += v
		}
		out[i] = time.Duration(ticks) * time.Second / procClockTick
	}
	return out, nil
}
