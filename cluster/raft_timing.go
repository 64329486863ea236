package cluster

import (
	"fmt"
	"time"
)

// Raft timing (docs/design.md §15). dragonboat counts every interval in ticks of
// NodeHostConfig.RTTMillisecond; Corral configures the intervals in milliseconds and converts
// them here, so changing the tick does not change how fast a dead leader is replaced.
//
// The tick is what an idle ensemble pays for: every tick wakes the step worker of every
// replica, every heartbeat is a message and its answer on every follower link. At a 10 ms
// tick with heartbeats every 20 ms an idle 3-server ensemble of five groups kept 0.14–0.15
// cores of the test machine busy; at 25 ms and 50 ms, 0.055–0.074 (docs/benchmarks.md,
// "Idle and closing sessions").

// raftTicks returns the tick and the election timeout and heartbeat interval in ticks.
func (c *Config) raftTicks() (tick time.Duration, election, heartbeat uint64) {
	tick = c.RTT
	if tick < time.Millisecond {
		return tick, 0, 0 // refused by validateRaftTiming
	}
	return tick, uint64(c.ElectionTimeout / tick), uint64(c.HeartbeatInterval / tick)
}

// validateRaftTiming refuses intervals dragonboat would refuse (it panics at the first shard
// otherwise) or that leave a follower too few heartbeats per election timeout.
func (c *Config) validateRaftTiming() error {
	tick, election, heartbeat := c.raftTicks()
	switch {
	case tick < time.Millisecond:
		return fmt.Errorf("cluster: corral.rttMs must be at least 1")
	case heartbeat < 1:
		return fmt.Errorf("cluster: corral.heartbeatMs %d is below one tick (corral.rttMs %d)",
			c.HeartbeatInterval.Milliseconds(), tick.Milliseconds())
	case election < 3*heartbeat:
		return fmt.Errorf("cluster: corral.electionMs %d must be at least 3 heartbeats (corral.heartbeatMs %d, in whole ticks of corral.rttMs %d)",
			c.ElectionTimeout.Milliseconds(), c.HeartbeatInterval.Milliseconds(), tick.Milliseconds())
	}
	return nil
}
