package flw_test

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/zktest"
	"go.uber.org/goleak"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/corralproc"
)

func TestMain(m *testing.M) {
	// The corral binary corralproc built for this process goes with it.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		corralproc.RemoveBinary()
		os.Exit(code)
	}))
}

// whitelist is the same on both sides; every other word is refused.
const whitelist = "ruok,srvr,mntr"

// refused are four-letter words ZooKeeper 3.8 knows that are not in whitelist.
var refused = []string{"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "hash", "isro", "srst", "stat", "stmk", "wchc", "wchp", "wchs"}

// mntr returns the key → value lines of a mntr reply.
func mntr(t *testing.T, ctx context.Context, addr string) map[string]string {
	t.Helper()
	out, err := corralproc.FourLetterWord(ctx, addr, "mntr")
	if err != nil {
		t.Fatalf("mntr %s: %v", addr, err)
	}
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "\t"); ok {
			m[k] = v
		}
	}
	return m
}

func intKey(t *testing.T, m map[string]string, key, server string) int {
	t.Helper()
	v, ok := m[key]
	if !ok {
		t.Fatalf("%s: mntr has no %s", server, key)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: mntr %s = %q is not a number", server, key, v)
	}
	return n
}

func TestFourLetterWords(t *testing.T) {
	t.Parallel()
	if err := apachezk.Available(); err != nil {
		t.Fatalf("Apache ZooKeeper is required: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := map[string]string{"4lw.commands.whitelist": whitelist}
	var ref *apachezk.Ensemble
	var refErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ref, refErr = apachezk.Start(ctx, apachezk.Options{Config: cfg})
	}()
	corral, err := corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: 2, Config: cfg})
	wg.Wait()
	if refErr == nil {
		t.Cleanup(func() { ref.Close() })
	}
	if err == nil {
		t.Cleanup(func() { corral.Close() })
	}
	if refErr != nil {
		t.Fatalf("start Apache ZooKeeper: %v", refErr)
	}
	if err != nil {
		t.Fatalf("start Corral: %v", err)
	}
	zkAddr := ref.Addr(0)

	t.Run("ruok", func(t *testing.T) {
		for _, addr := range append(corral.Addrs(), zkAddr) {
			if out, err := corralproc.FourLetterWord(ctx, addr, "ruok"); err != nil || out != "imok" {
				t.Errorf("%s: ruok = %q, %v; want imok", addr, out, err)
			}
		}
	})

	t.Run("srvr", func(t *testing.T) {
		stats, ok := zk.FLWSrvr(corral.Addrs(), 5*time.Second)
		modes := map[zk.Mode]int{}
		for _, s := range stats {
			if s.Error != nil {
				t.Errorf("%s: srvr does not parse: %v", s.Server, s.Error)
				continue
			}
			modes[s.Mode]++
			if s.NodeCount <= 0 || s.Version == "" || s.BuildTime.IsZero() {
				t.Errorf("%s: srvr parsed to %+v", s.Server, *s)
			}
		}
		if !ok || len(stats) != 3 {
			t.Fatalf("FLWSrvr ok=%v with %d stats", ok, len(stats))
		}
		if modes[zk.ModeLeader] != 1 || modes[zk.ModeFollower] != 2 {
			t.Errorf("modes %v, want one leader and two followers", modes)
		}
	})

	t.Run("mntr", func(t *testing.T) {
		for i, addr := range corral.Addrs() {
			m := mntr(t, ctx, addr)
			srvrMode, err := corral.Mode(ctx, i)
			if err != nil {
				t.Fatalf("srvr %s: %v", addr, err)
			}
			if m["zk_server_state"] != srvrMode {
				t.Errorf("%s: zk_server_state %q, srvr Mode %q", addr, m["zk_server_state"], srvrMode)
			}
			intKey(t, m, "zk_znode_count", addr)
			intKey(t, m, "zk_watch_count", addr)
		}
		// One create and one data watch through a server move the counts
		// (and the approximate data size: path and data lengths) of that
		// server as on ZooKeeper.
		type delta struct{ znodes, watches, dataSize int }
		measure := func(name, addr string) delta {
			before := mntr(t, ctx, addr)
			c := zktest.Connect(t, ctx, addr)
			if _, err := c.Create("/flw", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("%s: create: %v", name, err)
			}
			if _, _, _, err := c.GetW("/flw"); err != nil {
				t.Fatalf("%s: getW: %v", name, err)
			}
			after := mntr(t, ctx, addr)
			c.Close()
			d := delta{
				znodes:  intKey(t, after, "zk_znode_count", name) - intKey(t, before, "zk_znode_count", name),
				watches: intKey(t, after, "zk_watch_count", name) - intKey(t, before, "zk_watch_count", name),
				dataSize: intKey(t, after, "zk_approximate_data_size", name) -
					intKey(t, before, "zk_approximate_data_size", name),
			}
			t.Logf("%s: zk_znode_count %s → %s, zk_watch_count %s → %s, zk_approximate_data_size %s → %s", name,
				before["zk_znode_count"], after["zk_znode_count"], before["zk_watch_count"], after["zk_watch_count"],
				before["zk_approximate_data_size"], after["zk_approximate_data_size"])
			return d
		}
		want := measure("zookeeper", zkAddr)
		got := measure("corral", corral.Addr(1))
		if got != want {
			t.Errorf("after create+watch Corral's mntr moved by %+v, ZooKeeper's by %+v", got, want)
		}
	})

	t.Run("whitelist", func(t *testing.T) {
		for _, w := range refused {
			want, err := corralproc.FourLetterWord(ctx, zkAddr, w)
			if err != nil {
				t.Fatalf("ZooKeeper %s: %v", w, err)
			}
			// What ZooKeeper 3.8.0 prints (NopCommand, println).
			if lit := w + " is not executed because it is not in the whitelist.\n"; want != lit {
				t.Errorf("ZooKeeper answers %s with %q, expected %q", w, want, lit)
			}
			for _, addr := range corral.Addrs() {
				if got, err := corralproc.FourLetterWord(ctx, addr, w); err != nil || got != want {
					t.Errorf("%s: %s = %q, %v; ZooKeeper answers %q", addr, w, got, err, want)
				}
			}
		}
		// Not a four-letter word: both close the connection without a word.
		want, _ := corralproc.FourLetterWord(ctx, zkAddr, "xyzw")
		if got, err := corralproc.FourLetterWord(ctx, corral.Addr(0), "xyzw"); got != want {
			t.Errorf("xyzw: Corral %q (%v), ZooKeeper %q", got, err, want)
		}
	})
}
