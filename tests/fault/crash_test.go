package faulttest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/corralproc"
)

// TestAckedWritesSurviveKillingEveryServer: every write acknowledged before all three server
// processes are SIGKILLed at once is there after they restart (the Raft log is the write-ahead
// log: the shard stores keep no WAL of their own and are rebuilt from it).
func TestAckedWritesSurviveKillingEveryServer(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process crash test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c, _, err := zk.Connect(e.Addrs(), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	acl := zk.WorldACL(zk.PermAll)
	var mu sync.Mutex
	var acked []string
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := fmt.Sprintf("/w%d-%d", w, i)
				if _, err := c.Create(p, []byte(p), 0, acl); err != nil {
					return // the servers are gone: this write's outcome is unknown
				}
				mu.Lock()
				acked = append(acked, p)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	for i := 0; i < 3; i++ {
		if err := e.Kill(i); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	c.Close()
	wg.Wait()
	if len(acked) < 50 {
		t.Fatalf("only %d writes acknowledged before the crash", len(acked))
	}
	var rw sync.WaitGroup
	errs := make([]error, 3)
	for i := 0; i < 3; i++ {
		rw.Add(1)
		go func() { defer rw.Done(); errs[i] = e.Restart(ctx, i) }()
	}
	rw.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c2, _, err := zk.Connect(e.Addrs(), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Sync("/"); err != nil {
		t.Fatal(err)
	}
	for _, p := range acked {
		d, _, err := c2.Get(p)
		if err != nil || string(d) != p {
			t.Fatalf("acknowledged write %s lost after the crash: %q %v (of %d acknowledged)", p, d, err, len(acked))
		}
	}
	t.Logf("%d acknowledged writes survived killing every server", len(acked))
}
