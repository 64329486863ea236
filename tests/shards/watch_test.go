package shardstest

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestWatchEventBeforeReplyAcrossShards: a client sees a watch event before it sees the change
// that triggered it, also when it sees the change indirectly, through a later write on another
// shard. Session S (on server 2) watches a node on shard a; another session (on server 1)
// changes that node and then writes /b/y on shard b; S reads /b/y until it shows the new value,
// and by the time that read's reply is processed the watch event must have been received.
// The rounds use a data watch (setData), an exists watch (create) and a child watch (create of a
// child).
//
// Checking "received before the reply" with go-zookeeper: its receive loop (recvLoop in
// conn.go, v1.0.4) handles frames one at a time, in wire order; for a notification (xid -1) it
// calls notifyWatches, which sends the event on the watch's buffered channel (capacity 1)
// before the loop reads the next frame, and a reply is handed to the waiting call only when
// its frame is processed. So when Get returns, every event the server sent before that reply is
// already in its channel, and a non-blocking receive finds it.
//
// How a broken implementation fails: S's server applies shard a 200 ms late (from the start), so it
// applies the change of /b/y well before the change on shard a. A server that answered the read
// of /b/y from shard b's view without first catching up shard a (for a connection holding
// watches) sends the reply 200 ms before the event.
func TestWatchEventBeforeReplyAcrossShards(t *testing.T) {
	bothModes(t, testWatchEventBeforeReplyAcrossShards)
}

func testWatchEventBeforeReplyAcrossShards(t *testing.T, m mode) {
	ns := nonRoot()
	c := startEnsemble(t, m, lag{server: 1, shard: ns[0], d: 200 * time.Millisecond}) // S's server, shard a
	addrs := c.Addrs()
	names := namesOn(t, c, "we", ns[0], ns[1])
	a, b := "/"+names[0], "/"+names[1]
	x, y := a+"/x", b+"/y"
	w := connectZK(t, addrs[0])
	for _, p := range []string{a, x, b, y} {
		mustCreate(t, w, p, "0")
	}
	s := connectZK(t, addrs[1])
	syncAll(t, s, x, y)

	const rounds = 6
	for r := 1; r <= rounds; r++ {
		var (
			ch      <-chan zk.Event
			err     error
			typ     zk.EventType
			path    string
			trigger func() error
		)
		switch r % 3 {
		case 1: // data watch, setData
			path, typ = x, zk.EventNodeDataChanged
			_, _, ch, err = s.GetW(x)
			trigger = func() error { _, err := w.Set(x, []byte(strconv.Itoa(r)), -1); return err }
		case 2: // exists watch, create
			path, typ = fmt.Sprintf("%s/e%d", a, r), zk.EventNodeCreated
			var ok bool
			ok, _, ch, err = s.ExistsW(path)
			if ok {
				t.Fatalf("%s exists already", path)
			}
			trigger = func() error { _, err := w.Create(path, nil, 0, acl); return err }
		case 0: // child watch, create a child
			path, typ = a, zk.EventNodeChildrenChanged
			_, _, ch, err = s.ChildrenW(a)
			trigger = func() error { _, err := w.Create(fmt.Sprintf("%s/k%d", a, r), nil, 0, acl); return err }
		}
		must(t, err, "round %d: set the watch on %s", r, path)
		must(t, trigger(), "round %d: change %s", r, path)
		_, err = w.Set(y, []byte(strconv.Itoa(r)), -1)
		must(t, err, "round %d: set %s", r, y)
		deadline := time.Now().Add(10 * time.Second)
		for {
			v, _, err := readInt(s, y)
			must(t, err, "round %d: read %s", r, y)
			if v == r {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: server 2 still shows %s = %d", r, y, v)
			}
		}
		select {
		case ev := <-ch:
			if ev.Type != typ || ev.Path != path {
				t.Fatalf("round %d: event %v %s, want %v %s", r, ev.Type, ev.Path, typ, path)
			}
		default:
			t.Fatalf("round %d: the read of %s returned the value written after the change of %s, but the %v event had not arrived",
				r, y, path, typ)
		}
		// Let the lagging replica catch up before the next round (the hook holds back every
		// apply; more than one apply per lag period would accumulate).
		time.Sleep(250 * time.Millisecond)
	}
}
