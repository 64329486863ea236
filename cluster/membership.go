package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lni/dragonboat/v4"
)

// Membership: which servers run a replica of each shard, and in which role.
//
// The Raft membership of every shard is the truth; zoo.cfg's server.N lines only seed it at a
// new ensemble's first start (the participants are the initial voters) and name the observers
// the participants add as non-voting replicas. An operator adds and removes servers online
// through the admin endpoints below, which apply one change to the meta shard and to every data
// shard, each on its own: the Raft groups are independent, so there is no atomic ensemble-wide
// change, and a change interrupted halfway is finished by asking again (every step is
// idempotent). docs/design.md §10 has the design, docs/operations.md the procedure.

// membershipInterval is how often a server adds the observers of its zoo.cfg to the shards it
// leads and checks whether it was itself removed (membershipOnce).
const membershipInterval = time.Second

// memberAttempt bounds one membership request; a request that timed out may still have been
// applied, so the next attempt reads the membership again first.
const memberAttempt = 3 * time.Second

// errRefused marks a change that cannot be made whatever is retried (a removed id, a voter
// asked to become non-voting, an address taken by another replica).
var errRefused = errors.New("refused")

// memberState is the membership loop's state; settled and removedShards are owned by the
// loop's goroutine (see every), removed is created once and closed once.
type memberState struct {
	once          sync.Once
	removed       chan struct{}
	closeRemoved  sync.Once
	settled       map[[2]uint64]bool // (shard, observer) pairs that need no further look
	removedShards map[uint64]bool
	// leaderless is, per shard not yet removed while others are, since when its replica has
	// had no leader (removedByPeersSilence).
	leaderless map[uint64]time.Time
}

func (m *memberState) removedC() chan struct{} {
	m.once.Do(func() { m.removed = make(chan struct{}) })
	return m.removed
}

// Removed is closed once every replica of this server has been removed from its shard's
// membership (POST /members/remove): the server has closed its client port and has nothing left
// to do; `corral server` exits.
func (s *Node) Removed() <-chan struct{} { return s.members.removedC() }

// bootstrap returns StartReplica's initialMembers and join arguments for shardID. A replica this
// NodeHost has run before restarts from its log (nil, false). A server that was never started
// and joins a running ensemble (corral.join=true, or an observer) starts with no members and
// join=true: it waits until a member adds it and the leader sends it the log or a snapshot. Any
// other server starts a new ensemble whose voters are zoo.cfg's participants (observers are
// added later as non-voting replicas, addConfiguredObservers).
func bootstrap(nh *dragonboat.NodeHost, cfg *Config, shardID uint64) (map[uint64]dragonboat.Target, bool) {
	switch {
	case nh.HasNodeInfo(shardID, cfg.MyID):
		return nil, false
	case cfg.Join || cfg.Observer():
		return nil, true
	}
	members := map[uint64]dragonboat.Target{}
	for _, p := range cfg.Participants() {
		members[p.ID] = p.RaftAddress()
	}
	return members, false
}

// allShards returns the meta shard's id followed by the ids of the data shards this server runs
// a replica of: those of the first start and those added online whose replica it started
// (addshard.go), so membership changes, the balancer and the removal check see added shards.
func (s *Node) allShards() []uint64 { return append([]uint64{MetaShardID}, s.runningShards()...) }

// MemberChange is what one membership request did to one shard.
type MemberChange struct {
	Shard uint64
	// Result is "added", "promoted" (a non-voting replica became a voter), "removed",
	// "unchanged" (the shard already was as asked), or "failed".
	Result string
	Detail string
	Err    error
}

func (c MemberChange) String() string {
	line := fmt.Sprintf("shard=%d result=%s", c.Shard, c.Result)
	if c.Detail != "" {
		line += " detail=" + strconv.Quote(c.Detail)
	}
	if c.Err != nil {
		line += " error=" + strconv.Quote(c.Err.Error())
	}
	return line
}

// memberChangeFunc makes one membership request with the config change id it was decided on.
type memberChangeFunc func(ctx context.Context, ccid uint64) error

// memberDecision looks at a shard's membership and says what to do: a result with no change
// (nothing to do), a change and the result it has once made, or a refusal.
type memberDecision func(m *dragonboat.Membership) (result, detail string, change memberChangeFunc, err error)

// changeShard reads the shard's membership, decides, and makes the change, again and again until
// a change succeeds, the decision needs none (or refuses), or ctx ends. Reading first makes every request idempotent: a
// request that timed out after it was applied, was rejected because another change came first,
// or was lost with a leader, is simply looked at again.
func (s *Node) changeShard(ctx context.Context, shardID uint64, decide memberDecision) MemberChange {
	out := MemberChange{Shard: shardID}
	for {
		m, err := s.shardMembership(ctx, shardID)
		if err != nil {
			out.Result, out.Err = "failed", fmt.Errorf("reading the membership: %w", err)
			return out
		}
		result, detail, change, err := decide(m)
		out.Detail = detail
		if err != nil {
			out.Result, out.Err = "failed", err
			return out
		}
		if change == nil {
			out.Result = result
			return out
		}
		actx, cancel := context.WithTimeout(ctx, memberAttempt)
		err = change(actx, m.ConfigChangeID)
		cancel()
		if err == nil {
			out.Result = result
			return out
		}
		if ctx.Err() != nil || errors.Is(err, dragonboat.ErrClosed) || errors.Is(err, dragonboat.ErrShardNotFound) {
			out.Result, out.Err = "failed", err
			return out
		}
		s.log.Debug("membership request not applied; looking again", "shard", shardID, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// shardMembership reads a shard's membership linearizably (a ReadIndex), retrying attempts lost
// with a leader.
func (s *Node) shardMembership(ctx context.Context, shardID uint64) (*dragonboat.Membership, error) {
	var m *dragonboat.Membership
	err := s.retryAttempts(ctx, shardID, func(actx context.Context) error {
		var err error
		m, err = s.nh.SyncGetShardMembership(actx, shardID)
		return err
	})
	return m, err
}

// forShards runs f on every shard of ids at once and returns the results in the order of ids.
func forShards[T any](ids []uint64, f func(shardID uint64) T) []T {
	out := make([]T, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = f(id)
		}()
	}
	wg.Wait()
	return out
}

// AddMember adds server id, whose Raft traffic goes to raftAddr, to every shard: as a voter, or
// as a non-voting replica (a ZooKeeper observer). A non-voting replica asked to become a voter is
// promoted. The server itself must run with a zoo.cfg that says the same (corral.join=true for a
// voter; peerType=observer for an observer): dragonboat panics on a replica started as a voter
// that finds itself non-voting.
func (s *Node) AddMember(ctx context.Context, id uint64, raftAddr string, observer bool) []MemberChange {
	return forShards(s.allShards(), func(shardID uint64) MemberChange {
		return s.changeShard(ctx, shardID, s.decideAdd(shardID, id, raftAddr, observer))
	})
}

func (s *Node) decideAdd(shardID, id uint64, addr string, observer bool) memberDecision {
	role := "voter"
	if observer {
		role = "non-voting"
	}
	return func(m *dragonboat.Membership) (string, string, memberChangeFunc, error) {
		if _, ok := m.Removed[id]; ok {
			return "", "", nil, fmt.Errorf("%w: replica %d was removed from this shard before and can never rejoin: give the server a new myid and an empty dataDir", errRefused, id)
		}
		if a, ok := m.Nodes[id]; ok {
			if observer {
				return "", "", nil, fmt.Errorf("%w: replica %d is a voter; a voter cannot become non-voting (remove it, then add the server under a new id)", errRefused, id)
			}
			return "unchanged", "already a voter at " + a, nil, nil
		}
		if a, ok := m.NonVotings[id]; ok {
			if observer {
				return "unchanged", "already non-voting at " + a, nil, nil
			}
			// dragonboat promotes a non-voting replica only when asked with its own address.
			return "promoted", "voter at " + a, func(ctx context.Context, ccid uint64) error {
				return s.nh.SyncRequestAddReplica(ctx, shardID, id, a, ccid)
			}, nil
		}
		for _, set := range []map[uint64]string{m.Nodes, m.NonVotings, m.Witnesses} {
			for other, a := range set {
				if a == addr {
					return "", "", nil, fmt.Errorf("%w: address %s belongs to replica %d", errRefused, addr, other)
				}
			}
		}
		return "added", role + " at " + addr, func(ctx context.Context, ccid uint64) error {
			if observer {
				return s.nh.SyncRequestAddNonVoting(ctx, shardID, id, addr, ccid)
			}
			return s.nh.SyncRequestAddReplica(ctx, shardID, id, addr, ccid)
		}, nil
	}
}

// RemoveMember removes server id from every shard, voter or not. A shard that id leads is first
// handed to another voter, so its writes pause for a leader transfer rather than an election.
// Dragonboat stops a replica once it applies its own removal, and the removed id can never be
// added back (checkRemoved says what the removed server does).
func (s *Node) RemoveMember(ctx context.Context, id uint64) []MemberChange {
	return forShards(s.allShards(), func(shardID uint64) MemberChange {
		return s.changeShard(ctx, shardID, func(m *dragonboat.Membership) (string, string, memberChangeFunc, error) {
			if _, ok := m.Removed[id]; ok {
				return "unchanged", "already removed", nil, nil
			}
			_, voter := m.Nodes[id]
			_, nonVoting := m.NonVotings[id]
			switch {
			case !voter && !nonVoting:
				return "unchanged", "not a member", nil, nil
			case voter && len(m.Nodes) == 1:
				return "", "", nil, fmt.Errorf("%w: replica %d is the shard's only voter", errRefused, id)
			}
			return "removed", "", func(ctx context.Context, ccid uint64) error {
				if voter {
					s.leadershipAway(ctx, shardID, id, m.Nodes, "moved shard leadership before removing its leader")
				}
				return s.nh.SyncRequestDeleteReplica(ctx, shardID, id, ccid)
			}, nil
		})
	})
}

// leadershipAway asks the shard's leader, if it is id, to hand leadership to another reachable
// voter, and waits (within ctx) until it has, logging done when it did. If no transfer happens,
// what follows goes ahead anyway (a removal, a shutdown): the leader steps down or stops and
// the others elect a new one.
//
// A transfer is asked again until it happens. dragonboat's transfer target skips the election
// its TimeoutNow asks for while it has committed entries not yet applied, which under a write
// load is most of the time; the leader then gives the transfer up after an election timeout
// (dropping proposals meanwhile) and does not retry. The next attempt usually succeeds: while a
// transfer is pending no new entries arrive, so the target has applied everything.
func (s *Node) leadershipAway(ctx context.Context, shardID, id uint64, voters map[uint64]string, done string) {
	if lid, _, ok, err := s.nh.GetLeaderID(shardID); err != nil || !ok || lid != id {
		return
	}
	var targets []uint64
	for v := range voters {
		if v != id && peerReachable(voters[v]) {
			targets = append(targets, v)
		}
	}
	if len(targets) == 0 {
		return
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i] < targets[j] })
	for attempt := 0; ctx.Err() == nil; attempt++ {
		target := targets[attempt%len(targets)]
		if err := s.nh.RequestLeaderTransfer(shardID, target); err != nil {
			return
		}
		if s.awaitLeaderOtherThan(ctx, shardID, id, s.transferWait()) {
			s.log.Info(done, "shard", shardID, "from", id, "to", target, "attempts", attempt+1)
			return
		}
	}
}

// transferWait is how long one leader transfer may take: dragonboat's leader gives a transfer
// up after an election timeout, and a new request before that is ignored.
func (s *Node) transferWait() time.Duration {
	tick, election, _ := s.cfg.raftTicks()
	return time.Duration(election)*tick + 100*time.Millisecond
}

// awaitLeaderOtherThan waits up to wait (within ctx) until the shard's leader is not id.
func (s *Node) awaitLeaderOtherThan(ctx context.Context, shardID, id uint64, wait time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for ctx.Err() == nil {
		if lid, _, ok, err := s.nh.GetLeaderID(shardID); err == nil && ok && lid != id {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// MembersText is the admin /members page: per shard the leader, the voters, the non-voting
// replicas and the ids removed for good, as this server's replica reads them linearizably.
func (s *Node) MembersText(ctx context.Context) (string, error) {
	type line struct {
		text string
		err  error
	}
	lines := forShards(s.allShards(), func(id uint64) line {
		m, err := s.shardMembership(ctx, id)
		if err != nil {
			return line{fmt.Sprintf("shard=%d error=%q", id, err.Error()), err}
		}
		lid, _, _, _ := s.nh.GetLeaderID(id)
		removed := map[uint64]string{}
		for r := range m.Removed {
			removed[r] = ""
		}
		return line{text: fmt.Sprintf("shard=%d leader=%d voters=%s nonvoting=%s removed=%s", id, lid,
			idList(m.Nodes), idList(m.NonVotings), idList(removed))}
	})
	var b strings.Builder
	var errs []error
	b.WriteString(s.formatLevelText() + "\n")
	for _, l := range lines {
		b.WriteString(l.text + "\n")
		errs = append(errs, l.err)
	}
	return b.String(), errors.Join(errs...)
}

// idList formats a membership map as "1@host:port,2@host:port" (ids alone when there is no
// address), in id order.
func idList(m map[uint64]string) string {
	ids := sortedKeys(m)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(id, 10)
		if m[id] != "" {
			parts[i] += "@" + m[id]
		}
	}
	return strings.Join(parts, ",")
}

// serveMembers serves GET /members, POST /members/add?id=N&raft=host:port[&observer=1] and
// POST /members/remove?id=N (optional timeout=<duration>, default 60s). A change answers one
// MemberChange line per shard, status 200 when no shard failed, 500 otherwise.
func (s *Node) serveMembers(w http.ResponseWriter, r *http.Request) {
	timeout := 60 * time.Second
	if v := r.URL.Query().Get("timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			http.Error(w, "timeout: want a positive duration such as 30s", http.StatusBadRequest)
			return
		}
		timeout = d
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	op := strings.Trim(strings.TrimPrefix(r.URL.Path, "/members"), "/")
	if op == "" {
		if r.Method != http.MethodGet {
			http.Error(w, "GET /members", http.StatusMethodNotAllowed)
			return
		}
		text, err := s.MembersText(ctx)
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
		}
		io.WriteString(w, text)
		return
	}
	if op != "add" && op != "remove" {
		http.Error(w, "want /members, /members/add or /members/remove", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "POST /members/"+op, http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	id, err := strconv.ParseUint(q.Get("id"), 10, 64)
	if err != nil || id == 0 || id > 254 {
		// 254: a session id carries its server's id in the top byte (session.Table).
		http.Error(w, "id: want a server id 1..254", http.StatusBadRequest)
		return
	}
	var changes []MemberChange
	if op == "add" {
		addr := q.Get("raft")
		if host, port, err := net.SplitHostPort(addr); err != nil || host == "" || port == "" {
			http.Error(w, "raft: want the new server's host:peerPort", http.StatusBadRequest)
			return
		}
		observer, _ := strconv.ParseBool(q.Get("observer"))
		s.log.Info("adding a server", "id", id, "raft", addr, "observer", observer)
		changes = s.AddMember(ctx, id, addr, observer)
	} else {
		s.log.Info("removing a server", "id", id)
		changes = s.RemoveMember(ctx, id)
	}
	var b strings.Builder
	status := http.StatusOK
	for _, c := range changes {
		if c.Err != nil {
			status = http.StatusInternalServerError
		}
		fmt.Fprintln(&b, c.String())
	}
	w.WriteHeader(status)
	io.WriteString(w, b.String())
}

// membershipOnce is the membership duty, run every membershipInterval (Server.every).
func (s *Node) membershipOnce() {
	s.addConfiguredObservers()
	s.checkRemoved()
}

// addConfiguredObservers adds the observers of zoo.cfg as non-voting replicas of the shards this
// server leads, and the observers recorded with a data shard added online (the root shard's
// non-voting replicas when it was added) to that shard. Every participant runs it, so whichever
// leads a shard adds them; a pair (shard, observer) is looked at until it is settled: a
// non-voting member, a voter (promoted online) or removed online (never added back).
func (s *Node) addConfiguredObservers() {
	for _, p := range s.cfg.AllPeers() {
		if !p.Observer || p.ID == s.cfg.MyID {
			continue
		}
		for _, shardID := range s.allShards() {
			s.settleObserver(shardID, p.ID, p.RaftAddress(), "zoo.cfg")
		}
	}
	for _, rec := range s.startedAdded() {
		for _, id := range sortedKeys(rec.NonVoting) {
			if id != s.cfg.MyID {
				s.settleObserver(rec.ID, id, rec.NonVoting[id], "the shard's record")
			}
		}
	}
}

// settleObserver adds observer id (Raft address addr, named by source) as a non-voting replica
// of the shard if this server leads it and the pair is not settled yet.
func (s *Node) settleObserver(shardID, id uint64, addr, source string) {
	st := &s.members
	key := [2]uint64{shardID, id}
	if st.settled[key] || !s.leads(shardID) {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, memberAttempt)
	c := s.changeShard(ctx, shardID, func(m *dragonboat.Membership) (string, string, memberChangeFunc, error) {
		_, voter := m.Nodes[id]
		_, removed := m.Removed[id]
		if voter || removed {
			return "unchanged", "", nil, nil
		}
		return s.decideAdd(shardID, id, addr, true)(m)
	})
	cancel()
	if st.settled == nil {
		st.settled = map[[2]uint64]bool{}
	}
	switch {
	case c.Err == nil:
		st.settled[key] = true
		if c.Result == "added" {
			s.log.Info("added an observer as a non-voting replica", "shard", shardID, "observer", id, "from", source)
		}
	case errors.Is(c.Err, errRefused):
		st.settled[key] = true
		s.log.Warn("cannot add an observer", "shard", shardID, "observer", id, "from", source, "err", c.Err)
	default:
		s.log.Debug("adding an observer failed; retrying", "shard", shardID, "observer", id, "from", source, "err", c.Err)
	}
}

// sortedKeys returns the keys of a map by id, in order.
func sortedKeys[V any](m map[uint64]V) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// checkRemoved notices that this server was removed. Dragonboat stops a replica that applies its
// own removal (the NodeHost unloads it; GetLeaderID then answers ErrShardNotFound), and nothing
// else stops a replica while the server runs. Once any of its replicas is gone the server no
// longer serves clients (its view of that shard would go stale): it closes the client port and
// stops its session manager, and its clients reconnect elsewhere with their sessions (as after a
// crash). Once all are gone, Removed is closed.
func (s *Node) checkRemoved() {
	st := &s.members
	ids := s.allShards()
	for _, id := range ids {
		if _, _, _, err := s.nh.GetLeaderID(id); errors.Is(err, dragonboat.ErrShardNotFound) && !st.removedShards[id] {
			if st.removedShards == nil {
				st.removedShards = map[uint64]bool{}
			}
			st.removedShards[id] = true
			s.log.Warn("this server's replica was removed from the shard", "shard", id)
			if len(st.removedShards) == 1 {
				s.ready.Store(false)
				s.client.Close()
				s.sessions.Stop() // its activity reports would only fail now
				s.log.Warn("stopped serving clients: this server is being removed from the ensemble")
			}
		}
	}
	if n := len(st.removedShards); n > 0 && n < len(ids) {
		s.removedByPeersSilence(ids)
	}
	if len(st.removedShards) == len(ids) {
		st.closeRemoved.Do(func() {
			close(s.members.removedC())
			s.log.Warn("removed from every shard; this server can be stopped and its dataDir deleted (its id can never rejoin)")
		})
	}
}

// removalGrace is how long a replica of a server being removed may go without a leader before
// the server counts it as removed too (removedByPeersSilence).
const removalGrace = 10 * time.Second

// removedByPeersSilence handles a replica that never applies its own removal. A removal is
// committed by the other voters; if it commits before the removed replica has the entry, the
// leader sends it nothing more, and the replica campaigns forever at rising terms without a
// leader (seen in TestFaultDuringMembership). Removals are ensemble-wide (RemoveMember changes
// every shard), so once one shard removed this server, a replica that has had no leader for
// removalGrace since is counted as removed, and the server can finish leaving. Should the
// removal really be incomplete on that shard, the server stops there as a member, which is what
// an operator stopping it midway does: asking for the removal again completes it.
func (s *Node) removedByPeersSilence(ids []uint64) {
	st := &s.members
	if st.leaderless == nil {
		st.leaderless = map[uint64]time.Time{}
	}
	for _, id := range ids {
		if st.removedShards[id] {
			continue
		}
		if _, _, ok, err := s.nh.GetLeaderID(id); err == nil && ok {
			delete(st.leaderless, id)
			continue
		}
		since, seen := st.leaderless[id]
		if !seen {
			st.leaderless[id] = time.Now()
			continue
		}
		if time.Since(since) >= removalGrace {
			st.removedShards[id] = true
			s.log.Warn("counting this server's replica as removed: the server was removed from other shards and this replica has had no leader since",
				"shard", id, "for", time.Since(since).Round(time.Second).String())
		}
	}
}

// errRemovedAtStart is Start's error when a replica stopped while the server waited for its
// shards: dragonboat unloads a replica that replays its own removal from its log, so a removed
// server never serves again under its id.
func errRemovedAtStart(shardID uint64) error {
	return fmt.Errorf("cluster: this server was removed from shard %d (POST /members/remove); a removed id never rejoins: delete dataDir and add the server under a new myid", shardID)
}

// shardVoters returns, per shard this server runs a replica of, the voters and their Raft
// addresses as this replica last applied them (a local read, no Raft round trip). A shard whose
// replica has applied nothing yet is absent.
func (s *Node) shardVoters() map[uint64]map[uint64]string {
	out := map[uint64]map[uint64]string{}
	info := s.nh.GetNodeHostInfo(dragonboat.NodeHostInfoOption{SkipLogInfo: true})
	if info == nil {
		return out
	}
	for _, si := range info.ShardInfoList {
		if !si.Pending {
			out[si.ShardID] = si.Replicas
		}
	}
	return out
}
