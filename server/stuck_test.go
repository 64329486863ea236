package server

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/corral/corral/router"
	"github.com/corral/corral/watchhub"
)

// TestStuckWriteOnCutOffReplica is stuck.go's rule: a connection is dropped only when its
// oldest unanswered write has waited longer than cutOffGrace AND the local replica of a shard
// the write waits for is cut off: not confirmed for the bound, and no leader known. A slow
// write on a healthy replica, on an unconfirmed replica that has a leader, a young write on a
// cut-off one and a request that waits on no shard keep their connection; the watchdog skips
// the connections while no replica is cut off.
func TestStuckWriteOnCutOffReplica(t *testing.T) {
	r := router.New([]uint64{2, 3}, []uint8{1, 2}, router.PlaceSingle, nil)
	r.SetSync(func(ctx context.Context, id uint64) error { return nil })
	cut, healthy := r.Shard(2), r.Shard(3) // 2 never confirmed: its age is unbounded
	if err := r.EnsureFresh(context.Background(), healthy, time.Second); err != nil {
		t.Fatal(err)
	}
	leaderless := map[uint64]bool{cut.ID: true}
	s := New(Options{ServerID: 1, Router: r, Hub: watchhub.New(watchhub.Options{}), Log: slog.New(slog.DiscardHandler),
		MaxReadAge: 5 * time.Second, Leaderless: func(id uint64) bool { return leaderless[id] }})
	defer s.Close()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	const bound = 5 * time.Second // cutOffGrace(bound) = 625 ms
	now := time.Now()
	for _, tc := range []struct {
		name      string
		age       time.Duration
		on        []*router.Shard
		hasLeader bool // the unconfirmed replica still knows a leader: slow, not cut off
		stuck     *router.Shard
	}{
		{"old write on a cut-off replica", time.Second, []*router.Shard{cut}, false, cut},
		{"transaction with one cut-off participant", time.Second, []*router.Shard{healthy, cut}, false, cut},
		{"young write on a cut-off replica", 500 * time.Millisecond, []*router.Shard{cut}, false, nil},
		{"old write on a confirmed replica", 6 * time.Second, []*router.Shard{healthy}, false, nil},
		{"old request on no shard", 6 * time.Second, nil, false, nil},
		{"old write on an unconfirmed replica with a leader", time.Second, []*router.Shard{cut}, true, nil},
	} {
		leaderless[cut.ID] = !tc.hasLeader
		c := newConn(s, a)
		sl := c.reserve("write", tc.on...)
		sl.start = now.Add(-tc.age)
		if got := c.stuckOn(now, bound); got != tc.stuck {
			t.Errorf("%s: stuckOn = %v, want %v", tc.name, got, tc.stuck)
		}
		c.complete(sl, nil)
		if got := c.stuckOn(now, bound); got != nil {
			t.Errorf("%s: answered, stuckOn = shard %d", tc.name, got.ID)
		}
	}
	// The watchdog looks at connections only while some replica is cut off (anyCutOff).
	for _, hasLeader := range []bool{false, true} {
		leaderless[cut.ID] = !hasLeader
		if got := s.anyCutOff(now); got != !hasLeader {
			t.Errorf("anyCutOff with shard %d leaderless=%v: %v", cut.ID, !hasLeader, got)
		}
	}
}

// TestHandshakeOnCutOffSessionTable: a handshake waits at most half the session timeout for
// the session table (at least a second, at most the largest session timeout), and only the
// short grace while the table's replica is cut off, so its client soon tries another server.
func TestHandshakeOnCutOffSessionTable(t *testing.T) {
	cut := false
	s := &Server{o: Options{MaxTimeout: 40 * time.Second, MaxReadAge: 10 * time.Second, MetaCutOff: func() bool { return cut }}}
	for _, tc := range []struct{ session, want time.Duration }{
		{4 * time.Second, 2 * time.Second},
		{time.Second, time.Second},
		{120 * time.Second, 40 * time.Second},
	} {
		if got := s.handshakeTimeout(tc.session); got != tc.want {
			t.Errorf("reaching the quorum, session timeout %v: handshake timeout %v, want %v", tc.session, got, tc.want)
		}
	}
	cut = true
	if got := s.handshakeTimeout(4 * time.Second); got != 1250*time.Millisecond {
		t.Errorf("cut off: handshake timeout %v, want bound/8", got)
	}
}
