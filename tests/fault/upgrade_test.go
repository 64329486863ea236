package faulttest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/format"
	"github.com/corral/corral/internal/corralproc"
)

// TestRollingUpgrade upgrades a 3-server ensemble one server at a time, under load, to a
// binary that reads one format level more (built with -tags formatnext, package format), and
// checks the upgrade path of docs/operations.md "Upgrading":
//
//   - while any server runs the older binary, the ensemble stays at the older format level,
//     though the upgraded servers announced the newer one;
//   - once the last server is upgraded, the meta leader raises the level on every server;
//   - the older binary, started again on a server afterwards, refuses to run (it exits with an
//     error that names the format level) instead of misreading the ensemble's log, and the
//     ensemble keeps serving;
//   - across all of it, every acknowledged write is there, no session whose client stayed
//     connected expired, and no writer waited longer than the liveness bound.
func TestRollingUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process upgrade test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	older, err := corralproc.Binary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newer, err := corralproc.BinaryWithTags(ctx, t.TempDir(), "formatnext")
	if err != nil {
		t.Fatal(err)
	}
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: 2, TickTime: time.Second, Binary: older})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// The older binary is this tree's; the newer one reads one level more.
	old, next := int(format.Supported), int(format.Supported)+1
	waitFormat(t, e, []int{0, 1, 2}, func(f formatLine) bool { return f.level == old && f.all(3, old) },
		fmt.Sprintf("every server announced level %d and the ensemble is at it", old))

	load := startUpgradeLoad(t, e)
	defer load.stop()
	time.Sleep(time.Second)

	for i := 0; i < e.Size(); i++ {
		t.Logf("%.1fs: stopping server %d (%s)", time.Since(load.began).Seconds(), i+1, e.Addr(i))
		if err := e.Stop(i); err != nil {
			t.Fatal(err)
		}
		e.SetBinary(i, newer)
		t.Logf("%.1fs: starting server %d on the newer binary", time.Since(load.began).Seconds(), i+1)
		if err := e.Start(ctx, i); err != nil {
			t.Fatalf("server %d on the newer binary: %v", i+1, err)
		}
		t.Logf("%.1fs: server %d serves", time.Since(load.began).Seconds(), i+1)
		if i < e.Size()-1 {
			// Its announcement commits; the level must not move while others run the older binary.
			f := waitFormat(t, e, []int{i}, func(f formatLine) bool { return f.announced[uint64(i+1)] == next },
				fmt.Sprintf("server %d announced level %d", i+1, next))
			time.Sleep(2 * time.Second) // several rounds of the leader's raise check
			if f = readFormat(t, e, i); f.level != old {
				t.Fatalf("the level moved to %d with servers on the older binary: %+v", f.level, f)
			}
		}
		time.Sleep(time.Second)
	}
	waitFormat(t, e, []int{0, 1, 2}, func(f formatLine) bool { return f.level == next },
		fmt.Sprintf("the ensemble moved to level %d", next))

	// The older binary on an upgraded ensemble refuses to run.
	if err := e.Stop(0); err != nil {
		t.Fatal(err)
	}
	e.SetBinary(0, older)
	sctx, scancel := context.WithTimeout(ctx, 40*time.Second)
	err = e.Start(sctx, 0)
	scancel()
	if err == nil {
		t.Fatalf("the older binary served on an ensemble at level %d", next)
	}
	logged, _ := os.ReadFile(e.LogPath(0))
	if !strings.Contains(string(logged), fmt.Sprintf("format level %d", next)) || !strings.Contains(string(logged), "beyond this binary") {
		t.Fatalf("the older binary did not say why it stopped (start: %v):\n%s", err, corralproc.Tail(logged, 3000))
	}
	_ = e.Kill(0)
	e.SetBinary(0, newer)
	if err := e.Start(ctx, 0); err != nil {
		t.Fatalf("server 1 back on the newer binary: %v", err)
	}
	time.Sleep(time.Second)
	load.stop()
	load.check(t, e)
}

// formatLine is the "format level=N supported=id:level,..." line of GET /members.
type formatLine struct {
	level     int
	announced map[uint64]int
}

func (f formatLine) all(n, level int) bool {
	if len(f.announced) != n {
		return false
	}
	for _, l := range f.announced {
		if l != level {
			return false
		}
	}
	return true
}

var formatRE = regexp.MustCompile(`(?m)^format level=(\d+) supported=(\S*)$`)

func readFormat(t *testing.T, e *corralproc.Ensemble, i int) formatLine {
	t.Helper()
	f, err := fetchFormat(e, i)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func fetchFormat(e *corralproc.Ensemble, i int) (formatLine, error) {
	resp, err := http.Get("http://" + e.AdminAddr(i) + "/members")
	if err != nil {
		return formatLine{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return formatLine{}, err
	}
	m := formatRE.FindStringSubmatch(string(body))
	if m == nil {
		return formatLine{}, fmt.Errorf("server %d: no format line in GET /members:\n%s", i+1, body)
	}
	f := formatLine{announced: map[uint64]int{}}
	f.level, _ = strconv.Atoi(m[1])
	for _, p := range strings.Split(m[2], ",") {
		id, l, ok := strings.Cut(p, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseUint(id, 10, 64)
		f.announced[n], _ = strconv.Atoi(l)
	}
	return f, nil
}

// waitFormat waits (a liveness bound) until ok holds for the format line of each server.
func waitFormat(t *testing.T, e *corralproc.Ensemble, servers []int, ok func(formatLine) bool, what string) formatLine {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, i := range servers {
		for {
			f, err := fetchFormat(e, i)
			if err == nil && ok(f) {
				if i == servers[len(servers)-1] {
					return f
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s on server %d: %+v %v", what, i+1, f, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return formatLine{}
}

// upgradeLoad is the load a rolling upgrade runs under: writers creating znodes (each client
// connected to every server), and session holders with an ephemeral each.
type upgradeLoad struct {
	stopC   chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
	writers []*zk.Conn
	holders []*upgradeHolder

	began time.Time
	mu    sync.Mutex
	acked []string
	gaps  []time.Duration // per writer, the longest wait between acknowledgements
	gapAt []time.Time     // and when it ended
	gapOn []string        // and the servers the writer was connected to before and after it
}

type upgradeHolder struct {
	c       *zk.Conn
	session int64
	path    string
	mu      sync.Mutex
	expired bool
	done    chan struct{}
}

// upgradeBound is the liveness bound of a writer's wait between acknowledgements: a stopped
// server's clients reconnect to another server, and a stopped leader's shards elect a new one
// (a few seconds here); this is several times that.
const upgradeBound = 15 * time.Second

func startUpgradeLoad(t *testing.T, e *corralproc.Ensemble) *upgradeLoad {
	l := &upgradeLoad{stopC: make(chan struct{}), began: time.Now()}
	acl := zk.WorldACL(zk.PermAll)
	for h := 0; h < 3; h++ {
		c, evs, err := zk.Connect(e.Addrs(), 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
		if err != nil {
			t.Fatal(err)
		}
		hd := &upgradeHolder{c: c, path: fmt.Sprintf("/holder%d", h), done: make(chan struct{})}
		go func() {
			defer close(hd.done)
			for ev := range evs {
				if ev.Type == zk.EventSession && ev.State == zk.StateExpired {
					hd.mu.Lock()
					hd.expired = true
					hd.mu.Unlock()
				}
			}
		}()
		waitState(t, c, zk.StateHasSession)
		hd.session = c.SessionID()
		if _, err := c.Create(hd.path, nil, zk.FlagEphemeral, acl); err != nil {
			t.Fatal(err)
		}
		l.holders = append(l.holders, hd)
	}
	l.gaps, l.gapAt, l.gapOn = make([]time.Duration, 4), make([]time.Time, 4), make([]string, 4)
	for w := 0; w < 4; w++ {
		c, _, err := zk.Connect(e.Addrs(), 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
		if err != nil {
			t.Fatal(err)
		}
		l.writers = append(l.writers, c)
		// Two top-level subtrees per writer, so the writes go to both data shards.
		for _, top := range []string{fmt.Sprintf("/up%d", w), fmt.Sprintf("/upper%d", w)} {
			if _, err := c.Create(top, nil, 0, acl); err != nil {
				t.Fatal(err)
			}
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			last, lastOn := time.Now(), c.Server()
			for i := 0; ; i++ {
				select {
				case <-l.stopC:
					return
				default:
				}
				p := fmt.Sprintf("/up%d/n%d", w, i)
				if i%2 == 1 {
					p = fmt.Sprintf("/upper%d/n%d", w, i)
				}
				if _, err := c.Create(p, []byte(p), 0, acl); err != nil {
					continue // outcome unknown (connection lost): neither counted nor retried
				}
				now := time.Now()
				l.mu.Lock()
				l.acked = append(l.acked, p)
				on := c.Server()
				if now.Sub(last) > l.gaps[w] {
					l.gaps[w], l.gapAt[w], l.gapOn[w] = now.Sub(last), now, lastOn+" -> "+on
				}
				l.mu.Unlock()
				last, lastOn = now, on
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	return l
}

func (l *upgradeLoad) stop() {
	l.once.Do(func() {
		close(l.stopC)
		l.wg.Wait()
		for _, c := range l.writers {
			c.Close()
		}
	})
}

// check reads every acknowledged write back through each server, and checks the holders'
// sessions and ephemerals.
func (l *upgradeLoad) check(t *testing.T, e *corralproc.Ensemble) {
	t.Helper()
	if len(l.acked) < 100 {
		t.Fatalf("only %d writes acknowledged during the upgrade", len(l.acked))
	}
	for i := 0; i < e.Size(); i++ {
		c := dial(t, e.Addr(i))
		if _, err := c.Sync("/"); err != nil {
			t.Fatal(err)
		}
		for _, p := range l.acked {
			d, _, err := c.Get(p)
			if err != nil || string(d) != p {
				t.Fatalf("server %d: acknowledged write %s lost: %q %v (of %d acknowledged)", i+1, p, d, err, len(l.acked))
			}
		}
		for _, h := range l.holders {
			_, st, err := c.Get(h.path)
			if err != nil {
				t.Fatalf("server %d: the ephemeral %s of a connected session: %v", i+1, h.path, err)
			}
			if st.EphemeralOwner != h.session {
				t.Fatalf("server %d: the ephemeral %s is owned by %x, want %x", i+1, h.path, st.EphemeralOwner, h.session)
			}
		}
		c.Close()
	}
	for w, g := range l.gaps {
		if g > upgradeBound {
			t.Errorf("writer %d waited %v between acknowledgements (bound %v)", w, g, upgradeBound)
		}
	}
	for _, h := range l.holders {
		if h.c.State() != zk.StateHasSession || h.c.SessionID() != h.session {
			t.Errorf("holder %s: state %v session %x, want its session %x", h.path, h.c.State(), h.c.SessionID(), h.session)
		}
		h.c.Close()
		<-h.done
		if h.expired {
			t.Errorf("holder %s: its session expired during the upgrade", h.path)
		}
	}
	for w, g := range l.gaps {
		t.Logf("writer %d: longest wait between acknowledgements %v, ended %.1fs into the load (connected to %s)",
			w, g.Round(time.Millisecond), l.gapAt[w].Sub(l.began).Seconds(), l.gapOn[w])
	}
	t.Logf("%d writes acknowledged and read back on every server", len(l.acked))
}
