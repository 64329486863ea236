package cluster

import (
	"net"
	"sort"
	"time"
)

// balanceInterval is how often a server checks whether it leads more shards than its share
// (balanceOnce, run by Server.every).
const balanceInterval = 3 * time.Second

// balanceOnce is one round of leader balancing, which spreads shard leadership over the servers: a server that leads at least two
// shards more than the server leading the fewest hands one of its shards' leadership to that
// server. Leaders are where writes are sequenced, so spreading them spreads the write load. Each
// server only gives away its own leaderships, so two servers never fight over one shard; a
// transfer to a server that is down has no effect and is retried at a later round.

// balanceState remembers the last transfer, so a target that did not take the leadership (it is
// down or partitioned) is left alone for a while instead of being asked every round.
type balanceState struct {
	shard, target uint64
	avoid         map[uint64]time.Time
	// imbalanced counts consecutive rounds that saw an imbalance. A transfer waits for
	// balanceRounds of them: a server that just restarted leads nothing while it catches up, and
	// Raft stops the shard's writes during a transfer until the target has caught up, so moving
	// leadership to it at once stalled the shard (seen in the failover benchmark).
	imbalanced int
	// busy counts consecutive rounds that found no candidate shard quiet (shardQuiet).
	busy int
}

// balanceBusyRounds is how many rounds the balancer waits for a quiet shard before it transfers
// a busy one anyway (and risks the stall shardQuiet avoids): under a load that never pauses,
// leadership is still spread, about 30 s later.
const balanceBusyRounds = 10

// balanceRounds is how many consecutive rounds an imbalance must persist before a transfer.
const balanceRounds = 4

func (s *Node) balanceOnce() {
	b := &s.balance
	if b.avoid == nil {
		b.avoid = map[uint64]time.Time{}
	}
	if b.target != 0 {
		// A transfer that did not happen is left alone for a while only if its target cannot
		// be reached: a reachable target often skips the transfer's election because it has
		// entries to apply (leadershipAway), and the next round asks again.
		if lid, _, ok, err := s.nh.GetLeaderID(b.shard); err == nil && ok && lid != b.target && !peerReachable(s.shardVoters()[b.shard][b.target]) {
			b.avoid[b.target] = time.Now().Add(30 * time.Second)
		}
		b.target = 0
	}
	// The candidates are the shards' voters as this server's replicas know them, not zoo.cfg:
	// a server added online is not in zoo.cfg, and an observer (a non-voting replica) can never
	// lead (dragonboat ignores a transfer to it, and the balancer would keep asking).
	voters := s.shardVoters()
	addrs := map[uint64]string{}
	for _, m := range voters {
		for id, a := range m {
			addrs[id] = a
		}
	}
	if len(addrs) < 2 {
		return
	}
	ids := make([]uint64, 0, len(addrs))
	count := map[uint64]int{}
	for id := range addrs {
		ids = append(ids, id)
		count[id] = 0
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var mine []uint64
	for _, id := range s.allShards() {
		lid, _, ok, err := s.nh.GetLeaderID(id)
		if err != nil || !ok {
			return // an election is under way; look again later
		}
		count[lid]++
		if lid == s.cfg.MyID {
			mine = append(mine, id)
		}
	}
	target, fewest := uint64(0), int(^uint(0)>>1)
	for _, id := range ids {
		if until, ok := b.avoid[id]; ok && time.Now().Before(until) {
			// Avoided because it could not be reached: once it answers again, it is a candidate
			// at once (it still waits balanceRounds reachable rounds). A server added online is
			// unreachable until it is started, and a 30 s wait after its start left it without a
			// leadership for 40 s.
			if !peerReachable(addrs[id]) {
				continue
			}
			delete(b.avoid, id)
		}
		if count[id] < fewest {
			target, fewest = id, count[id]
		}
	}
	if target == 0 || len(mine) == 0 || count[s.cfg.MyID]-fewest < 2 {
		b.imbalanced, b.busy = 0, 0
		return
	}
	// A peer that leads nothing may simply be down (it leads nothing because it is dead): a
	// transfer to it stalls the shard's writes until the transfer times out. Probe it, and count
	// only rounds in which it was reachable, so a server that comes back is left to catch up for
	// balanceRounds rounds before it is handed a leadership (counting from the moment it died
	// handed it one two seconds after its restart, during its catch-up).
	if !peerReachable(addrs[target]) {
		b.avoid[target] = time.Now().Add(30 * time.Second)
		b.imbalanced = 0
		s.log.Debug("not transferring leadership to an unreachable server", "to", target)
		return
	}
	if b.imbalanced++; b.imbalanced < balanceRounds {
		return
	}
	b.imbalanced = 0
	// Give away the highest-numbered quiet shard the target is a voter of (the meta shard moves
	// last); after balanceBusyRounds rounds in which none was quiet, the highest-numbered one.
	// A shard this server writes nearly all of stays (follow.go: its leadership followed the
	// writes here, and would follow them back).
	shardID, first := uint64(0), uint64(0)
	for i := len(mine) - 1; i >= 0 && shardID == 0; i-- {
		if _, ok := voters[mine[i]][target]; ok && !s.isWriter(mine[i]) {
			if first == 0 {
				first = mine[i]
			}
			if s.shardQuiet(mine[i]) {
				shardID = mine[i]
			}
		}
	}
	if first == 0 {
		return
	}
	if shardID == 0 {
		if b.busy++; b.busy < balanceBusyRounds {
			// Every candidate is applying writes: try again next round, without waiting
			// balanceRounds again.
			b.imbalanced = balanceRounds - 1
			s.log.Debug("not transferring leadership: every shard that could go is applying writes", "to", target)
			return
		}
		shardID = first
	}
	b.busy = 0
	if err := s.nh.RequestLeaderTransfer(shardID, target); err != nil {
		s.log.Debug("leader transfer not started", "shard", shardID, "to", target, "err", err)
		return
	}
	b.shard, b.target = shardID, target
	s.log.Info("transferring shard leadership to balance the ensemble", "shard", shardID, "to", target,
		"leading", count[s.cfg.MyID], "target_leading", fewest)
}

// quietWindow is how long a shard must apply nothing before the balancer hands its leadership
// over (shardQuiet).
const quietWindow = 100 * time.Millisecond

// shardQuiet reports whether this server's replica of shardID applied nothing for quietWindow.
// dragonboat's transfer target starts no election while it has committed entries it has not
// applied, which under a steady write load is nearly always the case, and while a transfer is
// pending the leader drops the proposals other servers forward to it, without an answer: their
// proposers wait out dataAttempt (2 s) before proposing again (design.md §15). So a transfer
// under load mostly failed and stalled the shard's forwarded writes for 2 s
// (docs/benchmarks.md, "Idle and closing sessions"). A shard that applied nothing for a while
// has nothing left for the target to apply: the transfer goes through, and the shard had no
// writes to stall.
func (s *Node) shardQuiet(shardID uint64) bool {
	position := func() any {
		if shardID == MetaShardID {
			return s.table.Applied()
		}
		if sh := s.router.Shard(shardID); sh != nil {
			return sh.View() // every Update publishes a new view
		}
		return nil
	}
	before := position()
	if before == nil {
		return false
	}
	time.Sleep(quietWindow)
	return position() == before
}

// peerReachable reports whether a server accepts connections on its Raft address.
func peerReachable(raftAddr string) bool {
	c, err := net.DialTimeout("tcp", raftAddr, 300*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
