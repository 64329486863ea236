package zktest

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// QuietLogger is a go-zookeeper logger that drops everything.
var QuietLogger zk.Logger = quietLogger{}

// Connect opens a session with the given servers and waits until it is established (or ctx
// ends, failing the test). The session is closed by t.Cleanup.
func Connect(t testing.TB, ctx context.Context, addrs ...string) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect(addrs, 10*time.Second, zk.WithLogger(QuietLogger))
	if err != nil {
		t.Fatalf("connect %v: %v", addrs, err)
	}
	t.Cleanup(c.Close)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return c
			}
		case <-ctx.Done():
			t.Fatalf("no session with %v: %v", addrs, ctx.Err())
		}
	}
}
