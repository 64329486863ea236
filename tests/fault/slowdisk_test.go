package faulttest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/internal/linearize"
	"github.com/corral/corral/internal/slowdisk"
)

const (
	// sdDiskSize is each server's disk: dragonboat's log store (tan) preallocates two 64 MB
	// files per Raft group, three groups here; the backing files are sparse.
	sdDiskSize = 1 << 30
	// sdIOPS is the slow server's write operations per second during the fault: an fdatasync
	// of one Raft write batch (one or a few write operations) takes about 100 ms or more,
	// instead of well under a millisecond.
	sdIOPS     = 10
	sdBefore   = 3 * time.Second
	sdFaultFor = 12 * time.Second
	// sdAfter is the load after the fault: longer than two thirds of the session timeout, the
	// longest a connection of the slow server can go on waiting for a lease renewal.
	sdAfter      = 8 * time.Second
	sdWritePause = 20 * time.Millisecond
	sdLagPoll    = 100 * time.Millisecond
	// sdCatchUpBound is the liveness bound on the slow server's catch-up once its disk is fast
	// again: the log it has to write is the backlog of sdFaultFor of load, written at full
	// speed in well under a second.
	sdCatchUpBound = 20 * time.Second
)

// sdAck is one acknowledged write of an sdWriter: its sequence number, when it was sent and
// when it was acknowledged (recorder clock).
type sdAck struct {
	seq       int
	call, ret int64
}

// sdWriter writes its sequence numbers to one key, one at a time, through one server only: it
// measures the write latency through that server and the waits between acknowledgements.
type sdWriter struct {
	*rollClient
	home int
	key  string

	mu           sync.Mutex
	acks         []sdAck
	acked, tried int
	failed       map[string]int // outcome unknown, by error
	unexpected   error
}

func (w *sdWriter) run(ctx context.Context, now func() int64) {
	for n := 1; ctx.Err() == nil; n++ {
		w.mu.Lock()
		w.tried = n
		w.mu.Unlock()
		call := now()
		_, err := w.conn.Set(w.key, []byte(strconv.Itoa(n)), -1)
		ret := now()
		w.mu.Lock()
		if err == nil {
			w.acked = n
			w.acks = append(w.acks, sdAck{n, call, ret})
		} else if _, cerr := classify(linearize.Set, err); cerr != nil {
			w.unexpected = fmt.Errorf("writer through server %d: %w", w.home+1, cerr)
			w.mu.Unlock()
			return
		} else {
			w.failed[err.Error()]++
		}
		w.mu.Unlock()
		time.Sleep(sdWritePause)
	}
}

// phase is what a writer measured between from and to: the latency of the writes sent then,
// and the longest time without an acknowledgement.
func (w *sdWriter) phase(from, to int64) string {
	w.mu.Lock()
	var lat []time.Duration
	for _, a := range w.acks {
		if a.call >= from && a.call < to {
			lat = append(lat, time.Duration(a.ret-a.call))
		}
	}
	w.mu.Unlock()
	return fmt.Sprintf("%s; longest wait between acknowledgements %v", sdLatencies(lat), w.gap(from, to).Round(100*time.Microsecond))
}

// gap is the longest time between from and to without an acknowledgement.
func (w *sdWriter) gap(from, to int64) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, gap := from, int64(0)
	for _, a := range w.acks {
		if a.ret >= from && a.ret < to {
			gap = max(gap, a.ret-last)
			last = a.ret
		}
	}
	return time.Duration(max(gap, to-last))
}

// ackedAfter is when the first write with a sequence number above seq was acknowledged, or -1.
func (w *sdWriter) ackedAfter(seq int) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	i, _ := slices.BinarySearchFunc(w.acks, seq+1, func(a sdAck, s int) int { return a.seq - s })
	if i == len(w.acks) {
		return -1
	}
	return w.acks[i].ret
}

func (w *sdWriter) lastAcked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked
}

func sdLatencies(d []time.Duration) string {
	if len(d) == 0 {
		return "no write acknowledged"
	}
	slices.Sort(d)
	q := func(p float64) time.Duration { return d[int(p*float64(len(d)-1))].Round(100 * time.Microsecond) }
	return fmt.Sprintf("%d writes, latency median %v, p99 %v, max %v", len(d), q(0.5), q(0.99), q(1))
}

// sdLeaders says which server leads each Raft group, as server from sees it.
func sdLeaders(ctx context.Context, e *corralproc.Ensemble, from int) (map[uint64]int, string) {
	ls, err := e.ShardLeaders(ctx, from)
	if err != nil {
		return nil, err.Error()
	}
	out := map[uint64]int{}
	var parts []string
	for _, l := range ls {
		what := "meta"
		if l.Shard != cluster.MetaShardID {
			what = "data " + strconv.FormatUint(l.Shard, 10)
		}
		if l.HasLeader {
			out[l.Shard] = int(l.Leader) - 1
			parts = append(parts, fmt.Sprintf("%s: server %d", what, l.Leader))
		} else {
			parts = append(parts, what+": none")
		}
	}
	return out, strings.Join(parts, ", ")
}

// TestSlowDisk: each server of a 3-process ensemble keeps its data directory on a disk of its
// own (ext4 on a loop device, internal/slowdisk). While a recorded load runs, the disk of the
// server that leads the meta (session) shard, the one whose slowness touches most, becomes slow
// for sdFaultFor: its writes, and so the fdatasync of every Raft write batch, are limited to
// sdIOPS per second; then it is fast again. A writer per server, pinned to it, measures the
// write latency through each server before, during and after, and the longest wait between its
// acknowledgements; a reader on the slow server measures how far its state trails a writer's
// acknowledgements. Checked: the load's history is linearizable and no acknowledged write is
// lost (read back through every server); no session of the load or of the writers expired or
// changed; the writers through the other two servers got writes acknowledged during the fault
// without waiting longer than rollGapBound; no client of the load waited longer than
// rollStuckBound; the slow server still runs, catches up once its disk is fast (a new session
// there reads a write acknowledged then) within sdCatchUpBound, and acknowledges writes of the
// writer pinned to it again. The latencies and waits are logged, not asserted.
func TestSlowDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault test: ~40 s (skipped with -short)")
	}
	if err := slowdisk.Available(); err != nil {
		t.Skipf("slow-disk nemesis: %v", err)
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	all := []int{0, 1, 2}
	disks := make([]*slowdisk.Disk, len(all))
	serverCfg := map[int]map[string]string{}
	for _, i := range all {
		d, err := slowdisk.New(sdDiskSize)
		if err != nil {
			t.Skipf("slow-disk nemesis: %v", err)
		}
		// Registered before the ensemble's Close, it runs after it, once no server is in the
		// control group or holds files on the disk.
		t.Cleanup(func() {
			if err := d.Close(); err != nil {
				t.Errorf("removing server %d's disk: %v", i+1, err)
			}
		})
		disks[i] = d
		data := filepath.Join(d.Dir, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintf("%d\n", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		serverCfg[i] = map[string]string{"dataDir": data}
	}
	// The limit must slow a synced write on this kernel, or the test tests nothing.
	if err := disks[0].Throttle(sdIOPS); err != nil {
		t.Fatal(err)
	}
	slowSync, err := disks[0].Measure(5)
	if err != nil {
		t.Fatal(err)
	}
	if err := disks[0].Throttle(0); err != nil {
		t.Fatal(err)
	}
	fastSync, err := disks[0].Measure(5)
	if err != nil {
		t.Fatal(err)
	}
	if slowSync < time.Second/sdIOPS/2 {
		t.Skipf("slow-disk nemesis: a blkio limit of %d writes/s does not slow an O_DSYNC write here (%v, %v without)", sdIOPS, slowSync, fastSync)
	}
	t.Logf("O_DSYNC write of 4 KB on a server disk: %v; %v at %d writes/s", fastSync, slowSync, sdIOPS)

	const shards = 2
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: shards, TickTime: rollTickTime,
		ServerConfig: serverCfg, KeepDir: os.Getenv(rollKeepEnv) != ""})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, i := range all {
		if err := disks[i].Add(e.Pid(i)); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("ensemble up in %v (%s); each server's dataDir on its own disk (%s, %s, %s)", time.Since(begin).Round(time.Millisecond),
		e.Dir(), disks[0].Device(), disks[1].Device(), disks[2].Device())
	l, names := startShardLoad(t, e, "sd", shards)
	defer l.close()

	// The writers, one pinned to each server (and only to it), on keys of the first data shard.
	writerShard := dataShards(shards)[0]
	var writers []*sdWriter
	for _, i := range all {
		w := &sdWriter{rollClient: l.newRollClient(i, []int{i}, nil), home: i, key: fmt.Sprintf("/%s/w%d", names[dataShards(shards)[0]][0], i),
			failed: map[string]int{}}
		defer w.conn.Close()
		if _, err := w.conn.Create(w.key, []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", w.key, err)
		}
		writers = append(writers, w)
	}
	wctx, wstop := context.WithCancel(ctx)
	var wwg sync.WaitGroup
	defer func() { wstop(); wwg.Wait() }() // before the writers' sessions close, also on t.Fatal
	for _, w := range writers {
		wwg.Add(1)
		go func() { defer wwg.Done(); w.run(wctx, l.rec.Now) }()
	}
	time.Sleep(sdBefore)

	// The slow server: the meta shard's leader now.
	leaders, said := sdLeaders(ctx, e, 0)
	slow, ok := leaders[cluster.MetaShardID]
	if !ok {
		t.Fatalf("no meta shard leader: %s", said)
	}
	t.Logf("leaders before the fault: %s; the writers' keys are on data shard %d", said, writerShard)
	healthy := slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == slow })

	// The lag reader: the slow server's local (not synced) view of a healthy server's writer
	// key, on a session of its own.
	ref := writers[healthy[0]]
	lagConn := dial(t, e.Addr(slow))
	defer lagConn.Close()
	type lagSample struct {
		at   int64
		seen int
	}
	var lagMu sync.Mutex
	var lags []lagSample
	wwg.Add(1)
	go func() {
		defer wwg.Done()
		for wctx.Err() == nil {
			if d, _, err := lagConn.Get(ref.key); err == nil {
				seen, _ := strconv.Atoi(string(d))
				lagMu.Lock()
				lags = append(lags, lagSample{l.rec.Now(), seen})
				lagMu.Unlock()
			}
			time.Sleep(sdLagPoll)
		}
	}()

	writesBefore, err := disks[slow].Writes()
	if err != nil {
		t.Fatal(err)
	}
	if err := disks[slow].Throttle(sdIOPS); err != nil {
		t.Fatal(err)
	}
	faultAt, faultEnd := l.rec.Now(), time.Now().Add(sdFaultFor)
	t.Logf("server %d's disk slow (%d writes/s) at %.1fs into the load", slow+1, sdIOPS, time.Duration(faultAt-l.began).Seconds())
	time.Sleep(sdFaultFor / 2)
	during, err := disks[slow].Measure(3)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(faultEnd))
	_, saidDuring := sdLeaders(ctx, e, healthy[0])
	if err := disks[slow].Throttle(0); err != nil {
		t.Fatal(err)
	}
	restoredAt, restoredWall := l.rec.Now(), time.Now()
	writesDuring, err := disks[slow].Writes()
	if err != nil {
		t.Fatal(err)
	}
	writesDuring -= writesBefore
	faultFor := time.Duration(restoredAt - faultAt)
	t.Logf("server %d's disk fast again after %v: its process submitted %d writes meanwhile (%.1f/s, limit %d/s); "+
		"a 4 KB O_DSYNC write in its group took %v halfway; leaders at the end of the fault: %s",
		slow+1, ms(int64(faultFor)), writesDuring, float64(writesDuring)/faultFor.Seconds(), sdIOPS, during, saidDuring)

	// Catch-up: a new session on the slow server reads (locally, not synced) a write
	// acknowledged through a healthy server when the disk became fast again.
	target := ref.lastAcked()
	cc := dial(t, e.Addr(slow))
	var caughtUp int64 = -1
	for deadline := time.Now().Add(sdCatchUpBound); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if d, _, err := cc.Get(ref.key); err == nil {
			if seen, _ := strconv.Atoi(string(d)); seen >= target {
				caughtUp = l.rec.Now()
				break
			}
		}
	}
	cc.Close()
	if caughtUp < 0 {
		t.Errorf("server %d did not catch up within %v after its disk was fast again: a new session there does not read write %d of %s, acknowledged then",
			slow+1, sdCatchUpBound, target, ref.key)
	} else {
		t.Logf("server %d caught up %v after its disk was fast again: a new session there reads write %d of %s, acknowledged then",
			slow+1, ms(caughtUp-restoredAt), target, ref.key)
	}
	time.Sleep(sdAfter)
	wstop()
	wwg.Wait()
	endAt := l.rec.Now()

	// Report: latency through each server per phase, and the slow server's lag.
	for _, w := range writers {
		who := "healthy"
		if w.home == slow {
			who = "slow"
		}
		t.Logf("writer through server %d (%s): before: %s", w.home+1, who, w.phase(l.began, faultAt))
		t.Logf("writer through server %d (%s): during: %s", w.home+1, who, w.phase(faultAt, restoredAt))
		t.Logf("writer through server %d (%s): after: %s", w.home+1, who, w.phase(restoredAt, endAt))
		if len(w.failed) > 0 {
			t.Logf("writer through server %d: writes with unknown outcome: %v", w.home+1, w.failed)
		}
	}
	lagMu.Lock()
	var maxLag [3]int64
	var reads [3]int
	for _, s := range lags {
		p := 0
		switch {
		case s.at >= restoredAt:
			p = 2
		case s.at >= faultAt:
			p = 1
		}
		reads[p]++
		if acked := ref.ackedAfter(s.seen); acked >= 0 && acked < s.at {
			maxLag[p] = max(maxLag[p], s.at-acked)
		}
	}
	lagMu.Unlock()
	t.Logf("server %d's local state trailed writes acknowledged through server %d by at most %v before (%d reads), %v during (%d reads), %v after the fault (%d reads)",
		slow+1, ref.home+1, ms(maxLag[0]), reads[0], ms(maxLag[1]), reads[1], ms(maxLag[2]), reads[2])
	if lapse := rollLeaseLapse(e); lapse != "" {
		t.Logf("servers closed connections whose session lease they could not renew; the logs say:\n%s", lapse)
	}
	if n, lines := sdLapsesAfter(e, slow, restoredWall); n > 0 {
		t.Logf("server %d closed %d connections for their session lease after its disk was fast again:\n%s", slow+1, n, lines)
	}

	// Assertions.
	if !e.Running(slow) {
		t.Errorf("server %d exited:\n%s", slow+1, sdTail(e, slow))
	}
	for _, w := range writers {
		if w.unexpected != nil {
			t.Error(w.unexpected)
		}
		if w.home == slow {
			if w.gap(restoredAt, endAt) >= time.Duration(endAt-restoredAt) {
				t.Errorf("writer through server %d (slow): no write acknowledged in the %v after the disk was fast again",
					w.home+1, ms(endAt-restoredAt))
			}
			continue
		}
		if gap := w.gap(faultAt, restoredAt); gap > rollGapBound {
			t.Errorf("writer through server %d waited %v for an acknowledgement during the fault (bound %v)", w.home+1, gap, rollGapBound)
		}
	}
	for _, i := range all {
		c := dial(t, e.Addr(i))
		for _, w := range writers {
			if _, err := c.Sync(w.key); err != nil {
				t.Fatalf("server %d: sync %s: %v", i+1, w.key, err)
			}
			d, _, err := c.Get(w.key)
			got, _ := strconv.Atoi(string(d))
			if err != nil || got < w.acked || got > w.tried {
				t.Errorf("server %d: %s holds %q (%v); last acknowledged %d, last tried %d", i+1, w.key, d, err, w.acked, w.tried)
			}
		}
		c.Close()
	}
	for _, w := range writers {
		if w.expired.Load() {
			t.Errorf("writer through server %d: its session expired, though it stayed connected", w.home+1)
		}
		if id := w.conn.SessionID(); id != w.session {
			t.Errorf("writer through server %d: session %x at the end, want %x", w.home+1, id, w.session)
		}
	}
	res := l.check(all, 0)
	if res.maxGap > rollStuckBound {
		t.Errorf("%s waited %v for a definite outcome: the ensemble was stuck (bound %v)", res.maxGapWho, res.maxGap, rollStuckBound)
	}
	t.Logf("slow disk on server %d for %v: longest client wait %v (%s); %d acknowledged writes; total %v",
		slow+1, ms(int64(faultFor)), res.maxGap.Round(time.Millisecond), res.maxGapWho, res.acked, time.Since(begin).Round(time.Millisecond))
}

// sdLapsesAfter counts the connections server i closed for their session lease after since
// (one per connection, however often the log repeats it), with the first few log lines.
func sdLapsesAfter(e *corralproc.Ensemble, i int, since time.Time) (int, string) {
	data, _ := os.ReadFile(e.LogPath(i))
	seen := map[string]bool{}
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, "its session lease cannot be renewed") {
			continue
		}
		stamp, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil || at.Before(since) {
			continue
		}
		_, who, _ := strings.Cut(line, " session=")
		who, _, _ = strings.Cut(who, " reason=")
		if !seen[who] {
			seen[who] = true
			if len(lines) < 3 {
				lines = append(lines, line)
			}
		}
	}
	return len(seen), strings.Join(lines, "\n")
}

// sdTail is the end of server i's log.
func sdTail(e *corralproc.Ensemble, i int) string {
	data, _ := os.ReadFile(e.LogPath(i))
	return corralproc.Tail(data, 15)
}
