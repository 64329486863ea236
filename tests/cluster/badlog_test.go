package clustertest

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/testcluster"
)

// TestHammeringClientLogsFewLines: a client that sends bad input on connection after
// connection (40 connections, each closed by the server) costs at most three log lines per
// ten seconds, the last of those lines after a quiet spell saying how many were left out; a
// well-behaved client on the same server is served throughout.
func TestHammeringClientLogsFewLines(t *testing.T) {
	var logs lockedBuffer
	cl := testcluster.Start(t, testcluster.Options{Servers: 1, Shards: 1,
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	addr := cl.Addrs()[0]
	good, _ := connect(t, []string{addr})
	for i := 0; i < 40; i++ {
		c := dialRaw(t, addr)
		c.handshake(false)
		c.nc.Write([]byte{0xff, 0xff, 0xff, 0xfe}) // a negative frame length
		c.expectClosed()
		if _, err := good.Create("/good-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("the good client, after %d bad connections: %v", i+1, err)
		}
	}
	n := strings.Count(logs.String(), "bad client input, closing connection")
	if n < 1 || n > 3 {
		t.Fatalf("%d log lines for 40 bad connections from one host within seconds, want 1 to 3:\n%s", n, logs.String())
	}
}
