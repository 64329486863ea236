package zktest

import (
	"bytes"
	"context"
	"path"
	"slices"
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

// CompareTrees walks the source tree from p and checks every persistent znode in the target:
// data (null apart from empty), ACL and stat. An ephemeral is not expected in the target (an
// import or restore leaves them out), so its parent's stat is expected with as many children
// fewer and as many more in the cversion clients see (2 × stored − children). /zookeeper is
// skipped. It returns the number of znodes compared (p itself not counted).
func CompareTrees(t testing.TB, src, dst *zk.Conn, p string) int {
	t.Helper()
	kids, _, err := src.Children(p)
	must(t, err)
	n := 0
	for _, k := range kids {
		c := path.Join(p, k)
		if c == "/zookeeper" {
			continue
		}
		sd, ss, err := src.Get(c)
		must(t, err)
		if ss.EphemeralOwner != 0 {
			continue
		}
		dd, ds, err := dst.Get(c)
		if err != nil {
			t.Fatalf("%s in the target: %v", c, err)
		}
		if !bytes.Equal(sd, dd) || (sd == nil) != (dd == nil) {
			t.Errorf("%s: data %q (nil %v), want %q (nil %v)", c, dd, dd == nil, sd, sd == nil)
		}
		sa, _, err := src.GetACL(c)
		must(t, err)
		da, _, err := dst.GetACL(c)
		must(t, err)
		if !slices.Equal(sa, da) {
			t.Errorf("%s: ACL %v, want %v", c, da, sa)
		}
		eph := ephemeralChildren(t, src, c)
		want := *ss
		want.NumChildren -= int32(eph)
		want.Cversion += int32(eph) // one delete fewer to come: clients see 2 × stored − children
		if *ds != want {
			t.Errorf("%s: stat\n %+v, want\n %+v", c, *ds, want)
		}
		n += 1 + CompareTrees(t, src, dst, c)
	}
	return n
}

func ephemeralChildren(t testing.TB, c *zk.Conn, p string) int {
	kids, _, err := c.Children(p)
	must(t, err)
	n := 0
	for _, k := range kids {
		if _, st, err := c.Exists(path.Join(p, k)); err == nil && st.EphemeralOwner != 0 {
			n++
		}
	}
	return n
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
