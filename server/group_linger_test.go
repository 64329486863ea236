package server

import (
	"testing"
	"time"
)

// TestLingerRule: a group behind a group transaction answered at its decision waits for as many
// more writes as that group answered (capped by maxGroupOps); it starts at once behind a group
// whose replies waited for its commits, behind no group, or when it already holds the refill.
func TestLingerRule(t *testing.T) {
	var c conn
	group := func(writes int) *writeGroup { return &writeGroup{writes: make([]groupedWrite, writes)} }
	answered := func(writes int, round time.Duration) *writeGroup {
		p := group(writes)
		p.repliedAtDecision, p.round = true, round
		return p
	}
	for _, tc := range []struct {
		name   string
		p      *writeGroup
		have   int
		linger bool
		refill int
	}{
		{"no group before", nil, 3, false, 0},
		{"replies waited for the commits", group(29), 3, false, 0},
		{"answered at the decision", answered(29, 8*time.Millisecond), 3, true, 32},
		{"refill capped", answered(maxGroupOps, 8*time.Millisecond), 10, true, maxGroupOps},
		{"half the refill held", answered(4, 8*time.Millisecond), 4, true, 8},
		{"full already", answered(4, 8*time.Millisecond), maxGroupOps, false, 0},
		{"no round measured", answered(29, 0), 3, false, 0},
	} {
		g := group(tc.have)
		g.after = tc.p
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
