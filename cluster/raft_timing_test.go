package cluster

import (
	"strings"
	"testing"
	"time"
)

// TestRaftTiming: the intervals are milliseconds converted to whole ticks, so another tick
// keeps the election timeout; combinations dragonboat would refuse (or panic on at the first
// shard) are refused by Validate (LoadConfig) with the keys named.
func TestRaftTiming(t *testing.T) {
	for _, tt := range []struct {
		cfg                 string
		tick                time.Duration
		election, heartbeat uint64
		err                 string
	}{
		{cfg: "", tick: 25 * time.Millisecond, election: 8, heartbeat: 2},
		{cfg: "corral.rttMs=10\n", tick: 10 * time.Millisecond, election: 20, heartbeat: 5},
		{cfg: "corral.rttMs=10\ncorral.heartbeatMs=20\n", tick: 10 * time.Millisecond, election: 20, heartbeat: 2},
		{cfg: "corral.electionMs=1000\ncorral.heartbeatMs=100\n", tick: 25 * time.Millisecond, election: 40, heartbeat: 4},
		{cfg: "corral.electionMs=210\n", tick: 25 * time.Millisecond, election: 8, heartbeat: 2}, // whole ticks
		{cfg: "corral.heartbeatMs=10\n", err: "corral.heartbeatMs 10 is below one tick"},
		{cfg: "corral.electionMs=100\n", err: "corral.electionMs 100 must be at least 3 heartbeats"},
		{cfg: "corral.rttMs=0\n", err: "corral.rttMs must be at least 1"},
	} {
		cfg, err := ParseConfig(strings.NewReader("dataDir=/tmp/x\n" + tt.cfg))
		if err == nil {
			err = cfg.Validate() // as LoadConfig does
		}
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want one saying %q", tt.cfg, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.cfg, err)
		}
		tick, election, heartbeat := cfg.raftTicks()
		if tick != tt.tick || election != tt.election || heartbeat != tt.heartbeat {
			t.Errorf("%q: tick %v, election %d ticks, heartbeat %d ticks; want %v, %d, %d",
				tt.cfg, tick, election, heartbeat, tt.tick, tt.election, tt.heartbeat)
		}
	}
}
