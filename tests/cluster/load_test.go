package clustertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/zktest"
)

// subtreeLoad writes and reads the znodes top/k0..top/k(keys-1) while a test changes where they
// live: each writer bumps its half of the keys and records the value each write acknowledged;
// the reader reads the keys in turn and reports a version that goes back.
type subtreeLoad struct {
	top   string
	stop  atomic.Bool
	wg    sync.WaitGroup
	acked []atomic.Int64 // per key, the last acknowledged value (0: none)
	reads atomic.Int64
	errs  chan error
}

// startLoad starts two writers (one per address of writers) and one reader on reader.
func startLoad(t *testing.T, ctx context.Context, top string, keys int, writers [2]string, reader string) *subtreeLoad {
	l := &subtreeLoad{top: top, acked: make([]atomic.Int64, keys), errs: make(chan error, 16)}
	for wi, addr := range writers {
		wc := zktest.Connect(t, ctx, addr)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := int64(1); !l.stop.Load(); n++ {
				k := wi*keys/2 + int(n)%(keys/2)
				v := n*10 + int64(wi)
				if _, err := wc.Set(fmt.Sprintf("%s/k%d", top, k), []byte(fmt.Sprint(v)), -1); err != nil {
					l.errs <- fmt.Errorf("writer %d: %w", wi, err)
					return
				}
				l.acked[k].Store(v)
			}
		}()
	}
	rc := zktest.Connect(t, ctx, reader)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		last := make([]int32, keys)
		for n := 0; !l.stop.Load(); n++ {
			k := n % keys
			_, st, err := rc.Get(fmt.Sprintf("%s/k%d", top, k))
			if err != nil {
				l.errs <- fmt.Errorf("reader: %w", err)
				return
			}
			if st.Version < last[k] {
				l.errs <- fmt.Errorf("reader: %s/k%d went back from version %d to %d", top, k, last[k], st.Version)
				return
			}
			last[k] = st.Version
			l.reads.Add(1)
		}
	}()
	return l
}

// finish stops the load, waits for it and fails the test with every error it met.
func (l *subtreeLoad) finish(t *testing.T) {
	t.Helper()
	l.stop.Store(true)
	l.wg.Wait()
	close(l.errs)
	for err := range l.errs {
		t.Error(err)
	}
}

// checkAcked reads every acknowledged value through a new session on addr, after a sync.
func (l *subtreeLoad) checkAcked(t *testing.T, ctx context.Context, addr string) {
	t.Helper()
	cc := zktest.Connect(t, ctx, addr)
	defer cc.Close()
	if _, err := cc.Sync(l.top); err != nil {
		t.Fatal(err)
	}
	for k := range l.acked {
		want := l.acked[k].Load()
		if want == 0 {
			continue
		}
		data, _, err := cc.Get(fmt.Sprintf("%s/k%d", l.top, k))
		if err != nil || string(data) != fmt.Sprint(want) {
			t.Fatalf("%s: %s/k%d = %q (%v), acknowledged %d", addr, l.top, k, data, err, want)
		}
	}
}

// expectWatchEvents waits up to 10 s for one data or child event on each channel (watches set
// before a move, fired by a change after it); failure says why the test cares.
func expectWatchEvents(t *testing.T, failure string, chans ...<-chan zk.Event) {
	t.Helper()
	for _, ch := range chans {
		select {
		case ev := <-ch:
			if ev.Type != zk.EventNodeDataChanged && ev.Type != zk.EventNodeChildrenChanged {
				t.Fatalf("event %+v", ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatal(failure)
		}
	}
}
