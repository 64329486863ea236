package clustertest

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral/corral/internal/testcluster"
	"github.com/corral/corral/internal/testknobs"
	"github.com/corral/corral/wire"
)

// srvrField returns the value of a "Name: value" line of the srvr four-letter word ("" when
// absent or the server does not answer).
func srvrField(t *testing.T, addr, name string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "srvr")
	b, _ := io.ReadAll(c)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+": "); ok {
			return v
		}
	}
	return ""
}

// TestOutstandingLimit: with globalOutstandingLimit set, a client pipelining far more writes
// than the limit is held back (the server stops reading its requests) instead of queueing them
// all: the server's outstanding count, sampled with srvr, never exceeds the limit, every write
// is answered, in order and without an error. Another client with nothing outstanding is not
// held: its read is answered while the first client is throttled.
func TestOutstandingLimit(t *testing.T) {
	const limit, n = 8, 300
	cl := testcluster.Start(t, testcluster.Options{Servers: 1, Shards: 1,
		Extra: []string{"globalOutstandingLimit=" + strconv.Itoa(limit)}, Knobs: testknobs.Knobs{ApplyDelay: 2 * time.Millisecond}})
	addr := cl.Addrs()[0]

	var maxSeen atomic.Int64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if v, err := strconv.ParseInt(srvrField(t, addr, "Outstanding"), 10, 64); err == nil && v > maxSeen.Load() {
				maxSeen.Store(v)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	defer func() { close(stop); <-sampled }()

	pipe := dialRaw(t, addr)
	pipe.handshake(false)
	sendErr := make(chan error, 1)
	go func() {
		// Written as one stream from another goroutine: the server stops reading it.
		var e []byte
		for i := 1; i <= n; i++ {
			enc := wire.NewEncoder(nil)
			mark := wire.BeginFrame(enc)
			(&wire.RequestHeader{Xid: int32(i), Op: wire.OpCreate}).Encode(enc)
			(&wire.CreateRequest{Path: fmt.Sprintf("/p-%d", i), Data: make([]byte, 100), ACL: wire.OpenACLUnsafe}).Encode(enc)
			wire.EndFrame(enc, mark)
			e = append(e, enc.Bytes()...)
		}
		_, err := pipe.nc.Write(e)
		sendErr <- err
	}()

	// Once the limit is reached, a second client's read still gets through.
	deadline := time.Now().Add(10 * time.Second)
	for maxSeen.Load() < limit && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if maxSeen.Load() < limit {
		t.Fatalf("the pipelined writes never reached the limit (max outstanding %d): the test shows nothing", maxSeen.Load())
	}
	other := dialRaw(t, addr)
	other.handshake(false)
	start := time.Now()
	other.send(&wire.RequestHeader{Xid: 1, Op: wire.OpGetData}, &wire.GetDataRequest{Path: "/"})
	if h, _ := other.reply(); h.Err != wire.ErrOK {
		t.Fatalf("other client's getData: %v", h.Err)
	}
	t.Logf("other client's read answered in %v while the pipelining client was throttled", time.Since(start))

	for i := 1; i <= n; i++ {
		h, _ := pipe.reply()
		if h.Xid != int32(i) || h.Err != wire.ErrOK {
			t.Fatalf("reply %d: xid %d err %v", i, h.Xid, h.Err)
		}
	}
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
	if m := maxSeen.Load(); m > limit {
		t.Fatalf("outstanding requests reached %d, over globalOutstandingLimit %d", m, limit)
	}
	t.Logf("max outstanding seen %d (limit %d)", maxSeen.Load(), limit)
}
