package server

import (
	"testing"
	"time"
)

// TestLingerRule: a group behind a group transaction answered at its decision waits for as many
// writes as that group answered besides those it held before the decision (capped by
// maxGroupOps); it starts at once behind a group whose replies waited for its commits, behind no
// group, or when it already holds the refill. The writes that arrived after the decision are the
// refill's own: a group holding a whole window's refill does not wait for more.
func TestLingerRule(t *testing.T) {
	var c conn
	group := func(writes int) *writeGroup { return &writeGroup{writes: make([]groupedWrite, writes)} }
	answered := func(writes int, round time.Duration) *writeGroup {
		p := group(writes)
		p.repliedAtDecision, p.round = true, round
		return p
	}
	for _, tc := range []struct {
		name        string
		p           *writeGroup
		have, early int
		linger      bool
		refill      int
	}{
		{"no group before", nil, 3, 0, false, 0},
		{"replies waited for the commits", group(29), 3, 0, false, 0},
		{"answered at the decision", answered(29, 8*time.Millisecond), 3, 0, true, 29},
		{"writes from before the decision", answered(29, 8*time.Millisecond), 5, 3, true, 32},
		{"refill capped", answered(maxGroupOps, 8*time.Millisecond), 10, 10, true, maxGroupOps},
		{"half the refill held", answered(4, 8*time.Millisecond), 6, 4, true, 8},
		{"the whole refill in hand", answered(32, 8*time.Millisecond), 32, 0, false, 0},
		{"full already", answered(4, 8*time.Millisecond), maxGroupOps, 0, false, 0},
		{"no round measured", answered(29, 0), 3, 0, false, 0},
	} {
		g := group(tc.have)
		g.after, g.early = tc.p, tc.early
		got := c.linger(g)
		if got != tc.linger || got && g.refill != tc.refill {
			t.Errorf("%s: linger %v (refill %d), want %v (refill %d)", tc.name, got, g.refill, tc.linger, tc.refill)
		}
		if got {
			if c.linger(g) {
				t.Errorf("%s: a lingering group lingered again", tc.name)
			}
			g.lingerEnd.Stop()
		}
	}
}

// TestCountEarly: a write joining a group counts as early while the group before it is not
// decided, and not once it is.
func TestCountEarly(t *testing.T) {
	p := &writeGroup{decided: make(chan struct{})}
	g := &writeGroup{after: p}
	g.countEarly()
	g.countEarly()
	close(p.decided)
	g.countEarly()
	if g.early != 2 {
		t.Fatalf("early = %d, want 2 (two writes before the decision, one after)", g.early)
	}
	alone := &writeGroup{}
	alone.countEarly()
	if alone.early != 0 {
		t.Fatalf("a group behind no group counted %d early writes", alone.early)
	}
}
