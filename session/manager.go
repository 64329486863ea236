package session

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral/corral/format"
)

// Meta is the manager's access to the meta shard's Raft group.
type Meta interface {
	// Propose applies cmd to the session table through Raft and returns its result value.
	Propose(ctx context.Context, cmd []byte) (uint64, error)
	// Barrier returns once this server's replica has applied everything committed before the call
	// (a ReadIndex), so a following Get is linearizable.
	Barrier(ctx context.Context) error
	// IsLeader reports whether this server currently leads the meta shard.
	IsLeader() bool
}

// Options configure a Manager.
type Options struct {
	Self  uint64 // this server's id (1..254)
	Tick  time.Duration
	Table *Table
	Meta  Meta
	// CloseOnShards ends a closed session on every data shard and returns when every shard
	// applied it (idempotent), or with an error. With fence, in two rounds (docs/design.md §4,
	// rule 5): every shard records the session's tombstone, then every shard deletes its
	// ephemerals. Without, in one round that does both: Close asks for that only when no write
	// of the session can still be applied anywhere (see Close), and then only on the shards in
	// written when it is Complete. A non-zero owner makes the one round's ops conditional
	// (shard.CloseSessionIfOwner): a shard that records a newer ownership epoch of the session
	// changes nothing, and CloseOnShards then returns ErrMovedAway.
	CloseOnShards func(ctx context.Context, id int64, fence bool, owner uint64, written Written) error
	Log           *slog.Logger
	Now           func() time.Time
}

// Written is what the server closing a session knows of the data shards the session wrote to
// (server/written.go). When Complete, Shards are every data shard that can hold a trace of the
// session (an ephemeral, a stub of one, an ownership record), as long as no subtree moved since
// the router's mount table generation Gen: every write of the session was sent by this server,
// which noted its shards first. Otherwise (the zero value) any shard can.
type Written struct {
	Complete bool
	Shards   []uint64
	Gen      uint64
}

// ErrExpired reports a session that is unknown, closing or has a wrong password.
var ErrExpired = errors.New("session: expired or unknown")

// ErrMovedAway reports a take-over that another server's take-over overtook.
var ErrMovedAway = errors.New("session: taken over by another server meanwhile")

// Manager runs this server's part of session management: creating and validating sessions,
// reporting activity, and — while this server leads the meta shard — deciding expiry and driving
// ephemeral cleanup. Stop it with Stop.
//
// It also keeps, for every session this server serves, the basis of the server's lease on it
// (Heard): the latest time, on this server's monotonic clock, at which the session's client
// was heard, as carried by a renewal (Create, TakeOver, Renew) that committed and left the
// session alive and owned by this server. The meta leader cannot expire the session before
// Heard plus the session timeout (docs/design.md §4), which is what lets the client port stop
// answering before that can happen.
type Manager struct {
	o  Options
	mu struct {
		sync.Mutex
		active      map[int64]time.Time // client heard at, not reported yet
		heard       map[int64]time.Time // lease basis (see the type's comment)
		renewed     chan struct{}       // closed and replaced after each confirmed report
		reportedAt  time.Time           // when the last activity report that committed was sent
		reportErr   error               // the last report's error, nil after a success
		nextID      int64
		leaderSince time.Time
		cleaning    map[int64]bool
		// reportBy is when a report is due at the latest (KickWithin); zero: at the next tick.
		reportBy time.Time
	}
	kick chan struct{}
	// soon tells the loop that reportBy moved earlier.
	soon chan struct{}
	// closingSeen is when this server, as the meta shard's leader, first found each closing
	// session it did not close itself (leaderDuties; loop goroutine only).
	closingSeen map[int64]time.Time
	ctx         context.Context
	stop        context.CancelFunc
	wg          sync.WaitGroup
	// expired counts the expiries this server decided (as the meta shard's leader) that
	// committed: summed over the servers, each expiry counts once.
	expired atomic.Uint64
	// closes counts the client closes whose cleanup this server ran, by rounds on the data
	// shards: closes[0] in one round, closes[1] fence first (Close).
	closes [2]atomic.Uint64
}

// Expired returns how many session expiries this server decided and committed.
func (m *Manager) Expired() uint64 { return m.expired.Load() }

// Closes returns how many client closes this server ended on the data shards in one round
// (fenced false) or with the fence round first (fenced true).
func (m *Manager) Closes(fenced bool) uint64 {
	if fenced {
		return m.closes[1].Load()
	}
	return m.closes[0].Load()
}

// NewManager starts a manager.
func NewManager(o Options) *Manager {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	m := &Manager{o: o, kick: make(chan struct{}, 1), soon: make(chan struct{}, 1)}
	m.mu.active = map[int64]time.Time{}
	m.mu.heard = map[int64]time.Time{}
	m.mu.renewed = make(chan struct{})
	m.mu.cleaning = map[int64]bool{}
	// ZooKeeper's layout: server id in the top byte, then time; ids stay below 0xFF<<56 (TTL
	// marker) because server ids are at most 254, and positive.
	m.mu.nextID = (int64(o.Self) << 56) | ((o.Now().UnixMilli() << 24) >> 8 & (1<<56 - 1))
	m.ctx, m.stop = context.WithCancel(context.Background())
	m.wg.Add(1)
	go m.loop()
	return m
}

// Stop stops the manager's goroutines and waits for them.
func (m *Manager) Stop() {
	m.mu.Lock()
	m.stop()
	m.mu.Unlock()
	m.wg.Wait()
}

// Table returns the replicated table.
func (m *Manager) Table() *Table { return m.o.Table }

// Create registers a new session owned by this server.
func (m *Manager) Create(ctx context.Context, timeout int32) (int64, []byte, error) {
	pw := make([]byte, 16)
	if _, err := rand.Read(pw); err != nil {
		return 0, nil, err
	}
	for attempt := 0; attempt < 8; attempt++ {
		m.mu.Lock()
		m.mu.nextID++
		id := m.mu.nextID
		m.mu.Unlock()
		start := m.o.Now()
		res, err := m.o.Meta.Propose(ctx, EncodeCreate(Entry{ID: id, Passwd: pw, Timeout: timeout,
			Owner: m.o.Self, LastSeen: start.UnixMilli()}))
		if err != nil {
			return 0, nil, err
		}
		// ResultExists after a retried proposal: the first attempt went through.
		if e, ok := m.o.Table.Get(id); res == ResultOK || ok && subtle.ConstantTimeCompare(e.Passwd, pw) == 1 {
			m.setHeard(id, start)
			return id, pw, nil
		}
	}
	return 0, nil, ErrExists
}

// LocalID returns a session id no session of this server's Create has or will have: for a
// session that lives only on this server (a read-only session, server/readonly.go).
func (m *Manager) LocalID() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.nextID++
	return m.mu.nextID
}

// Reports says when the last activity report that committed was sent, and the error of the
// last report if it failed: what a connection closed for a lapsed lease logs.
func (m *Manager) Reports() (lastOK time.Time, lastErr error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.reportedAt, m.mu.reportErr
}

// Validate checks a reconnecting client's session id and password and returns the entry. A
// session this replica does not know yet is looked up again after a barrier.
func (m *Manager) Validate(ctx context.Context, id int64, pw []byte) (Entry, error) {
	e, ok := m.o.Table.Get(id)
	if !ok {
		if err := m.o.Meta.Barrier(ctx); err != nil {
			return Entry{}, err
		}
		e, ok = m.o.Table.Get(id)
	}
	if !ok || e.Closing || subtle.ConstantTimeCompare(e.Passwd, pw) != 1 {
		return Entry{}, ErrExpired
	}
	return e, nil
}

// Touch records that the session's client was heard at the given time (read from the same
// clock as Options.Now); it is reported at the next tick.
func (m *Manager) Touch(id int64, at time.Time) {
	m.mu.Lock()
	if at.After(m.mu.active[id]) {
		m.mu.active[id] = at
	}
	m.mu.Unlock()
}

// Kick asks for an activity report now if the session has activity not reported yet (its
// lease ran short and its client spoke since the last renewal).
func (m *Manager) Kick(id int64) {
	m.mu.Lock()
	_, pending := m.mu.active[id]
	m.mu.Unlock()
	if pending {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
}

// KickWithin asks for an activity report within d if the session has activity not reported
// yet: the report then carries every session heard until it starts, so the many connections
// that ask for one in the same d share it (one timer per server, not one per connection).
func (m *Manager) KickWithin(id int64, d time.Duration) {
	by := time.Now().Add(d)
	m.mu.Lock()
	_, pending := m.mu.active[id]
	sooner := pending && (m.mu.reportBy.IsZero() || by.Before(m.mu.reportBy))
	if sooner {
		m.mu.reportBy = by
	}
	m.mu.Unlock()
	if sooner {
		select {
		case m.soon <- struct{}{}:
		default:
		}
	}
}

// Heard returns the basis of this server's lease on the session (see Manager) and a channel
// closed after the next confirmed activity report. ok is false once the session is unknown
// here, closed, or owned by another server as far as a renewal told.
func (m *Manager) Heard(id int64) (at time.Time, ok bool, next <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok = m.mu.heard[id]
	return at, ok, m.mu.renewed
}

// HeardAll sets at[i] to when session ids[i] was last heard, or to the zero time where it has
// no lease here (Heard's !ok), under one lock: the watchdog asks for every local session at once.
func (m *Manager) HeardAll(ids []int64, at []time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, id := range ids {
		at[i] = m.mu.heard[id] // only times after the zero time are stored
	}
}

// Forget drops the session's lease (its connection on this server ended).
func (m *Manager) Forget(id int64) {
	m.mu.Lock()
	delete(m.mu.heard, id)
	delete(m.mu.active, id)
	m.mu.Unlock()
}

func (m *Manager) setHeard(id int64, at time.Time) {
	m.mu.Lock()
	if at.After(m.mu.heard[id]) {
		m.mu.heard[id] = at
	}
	m.mu.Unlock()
}

// CreatedEpoch is the ownership epoch of a session on the server that created it: below the
// epoch of any take-over (a Raft index after the create's).
const CreatedEpoch = 1

// TakeOver makes this server the session's owner and renews it, through the meta shard, and
// returns this server's ownership epoch of the session (the take-over's Raft index, above
// every earlier owner's). It returns ErrExpired when the committed table holds the session
// closed or no longer holds it: the local replica may be stale (this server was partitioned
// or paused), the outcome of the committed command is not.
func (m *Manager) TakeOver(ctx context.Context, id int64) (epoch uint64, err error) {
	start := m.o.Now()
	epoch, err = m.o.Meta.Propose(ctx, EncodeTakeOver(m.o.Self, start.UnixMilli(), []int64{id}))
	if err != nil {
		return 0, err
	}
	// Propose returns after this replica applied the command: the table reflects it.
	e, ok := m.o.Table.Get(id)
	switch {
	case !ok || e.Closing:
		return 0, ErrExpired
	case e.Owner != m.o.Self:
		return 0, ErrMovedAway
	case epoch <= CreatedEpoch:
		// Only a take-over's index can be the result; anything else is a bug in the meta shard.
		return 0, fmt.Errorf("session: take-over of %x returned epoch %d", id, epoch)
	}
	m.setHeard(id, start)
	return epoch, nil
}

// Close ends a session (client closeSession) and removes its ephemerals on every shard.
//
// epoch is the ownership epoch of the connection closing the session, non-zero only when
// nothing but that connection can have a write of the session still to apply: every earlier
// request of the connection was answered and its writes applied (or the connection would
// have closed), and, if it took the session over, its epoch is recorded on every data shard,
// so every shard refuses an earlier owner's write from then on (rule 6). Then, if the table,
// with the close applied, names that epoch as the session's latest owner — no other
// connection took the session over, and none can now — no write of the session is left to
// apply anywhere, and the shards are closed in one round instead of fence-then-delete. In
// every other case (an expiry, another owner, an epoch the table does not know) the two rounds.
// The one round goes to the shards of written when it is Complete (a session that wrote to one
// shard costs one shard's round, as its close costs ZooKeeper one transaction), the two rounds
// to every shard. It returns once the shards are closed; the cleaned record follows
// (recordCleaned).
//
// From format level 7 the one round runs at the same time as the meta close, its ops
// conditional on epoch (closeOwned); below it, after.
func (m *Manager) Close(ctx context.Context, id int64, epoch uint64, written Written) error {
	if epoch != 0 && m.o.Table.Level() >= format.LevelCloseOwner {
		return m.closeOwned(ctx, id, epoch, written)
	}
	if _, err := m.o.Meta.Propose(ctx, EncodeClose(id, m.o.Now().UnixMilli(), false)); err != nil {
		return err
	}
	if !m.latestOwner(id, epoch) {
		return m.closeFenced(ctx, id)
	}
	if err := m.o.CloseOnShards(ctx, id, false, 0, written); err != nil {
		return err
	}
	m.closed(id, false)
	return nil
}

// closeOwned is Close for a connection with an ownership epoch (docs/design.md §4, "The close
// in one round"): the data shards' round, each op conditional on epoch, is submitted at the
// same time as the meta close, so the close costs one round where it cost two in sequence.
// Invariant: an ephemeral of the session is deleted by this round only on a shard where no
// newer owner's record is; and a newer owner writes only after its record is on every shard,
// which a shard holding this round's tombstone refuses. So either the newer owner's records
// came first everywhere this round reaches, and it deleted nothing, or that owner never
// writes. The meta close then tells whether this connection was the latest owner; if it was
// not (or a shard refused the round), the two fenced rounds follow on every shard, as for an
// expiry.
func (m *Manager) closeOwned(ctx context.Context, id int64, epoch uint64, written Written) error {
	shards := make(chan error, 1)
	go func() { shards <- m.o.CloseOnShards(ctx, id, false, epoch, written) }()
	_, err := m.o.Meta.Propose(ctx, EncodeClose(id, m.o.Now().UnixMilli(), false))
	shardErr := <-shards // the goroutine ends with ctx at the latest
	if err != nil {
		return err
	}
	latest := m.latestOwner(id, epoch)
	switch {
	case latest && shardErr == nil:
		m.closed(id, false)
		return nil
	case shardErr != nil && !errors.Is(shardErr, ErrMovedAway):
		return shardErr
	case latest:
		// The table names this connection the latest owner, so no shard can record a newer
		// epoch: a refusal means the records disagree with the table. Fence, and say so.
		m.o.Log.Warn("a data shard refused the close of the session's latest owner; closing it fenced",
			"session", hexID(id), "epoch", epoch)
	}
	return m.closeFenced(ctx, id)
}

// latestOwner reports whether the table, with the session's close applied, names epoch as its
// latest owner.
func (m *Manager) latestOwner(id int64, epoch uint64) bool {
	latest, known := m.o.Table.OwnerEpoch(id)
	return known && epoch != 0 && latest == epoch
}

// closeFenced ends a closed session on every data shard in the two rounds.
func (m *Manager) closeFenced(ctx context.Context, id int64) error {
	if err := m.o.CloseOnShards(ctx, id, true, 0, Written{}); err != nil {
		return err
	}
	m.closed(id, true)
	return nil
}

// closed counts a close whose shards are done and records its cleanup in the background.
func (m *Manager) closed(id int64, fenced bool) {
	m.recordCleaned(id)
	if fenced {
		m.closes[1].Add(1)
	} else {
		m.closes[0].Add(1)
	}
}

// recordCleaned records in the background that a closed session's cleanup is done (the
// session leaves the table). The close is complete for its client once no data shard holds its
// ephemerals; the record is bookkeeping, and a record that never lands (this server stopped or
// the proposal failed) is made again by the meta shard's leader, which cleans up every closing
// session it finds (leaderDuties; the cleanup is idempotent). The goroutine belongs to the
// manager: Stop ends and waits for it.
func (m *Manager) recordCleaned(id int64) {
	m.mu.Lock()
	if m.ctx.Err() != nil {
		m.mu.Unlock()
		return
	}
	m.wg.Add(1) // under mu, which Stop takes to cancel: no Add once Stop waits
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
		defer cancel()
		if _, err := m.o.Meta.Propose(ctx, EncodeCleaned(id)); err != nil && m.ctx.Err() == nil {
			m.o.Log.Warn("recording a closed session as cleaned failed; the meta shard's leader will clean it up again", "session", hexID(id), "err", err)
		}
	}()
}

func (m *Manager) cleanup(ctx context.Context, id int64, fence bool) error {
	if err := m.o.CloseOnShards(ctx, id, fence, 0, Written{}); err != nil {
		return err
	}
	_, err := m.o.Meta.Propose(ctx, EncodeCleaned(id))
	return err
}

func (m *Manager) loop() {
	defer m.wg.Done()
	t := time.NewTicker(m.o.Tick)
	defer t.Stop()
	by := time.NewTimer(time.Hour) // the report KickWithin asked for
	by.Stop()
	defer by.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		case <-m.kick:
			m.reportActivity()
			continue
		case <-m.soon:
			m.mu.Lock()
			at := m.mu.reportBy
			m.mu.Unlock()
			if !at.IsZero() {
				by.Reset(time.Until(at))
			}
			continue
		case <-by.C:
			m.reportActivity()
			continue
		}
		m.reportActivity()
		if m.o.Meta.IsLeader() {
			m.leaderDuties()
		} else {
			m.mu.Lock()
			m.mu.leaderSince = time.Time{}
			m.mu.Unlock()
			clear(m.closingSeen)
		}
	}
}

// reportActivity renews the sessions whose clients were heard since the last report, each
// with the age of its latest activity, and, once the renewal committed, moves the lease basis
// of those still alive and owned here forward.
func (m *Manager) reportActivity() {
	now := m.o.Now()
	m.mu.Lock()
	if len(m.mu.active) == 0 {
		m.mu.Unlock()
		return
	}
	heard := m.mu.active
	m.mu.active = make(map[int64]time.Time, len(heard))
	m.mu.reportBy = time.Time{} // this report carries every session KickWithin asked for
	m.mu.Unlock()
	rs := make([]Renewal, 0, len(heard))
	for id, at := range heard {
		rs = append(rs, Renewal{ID: id, Age: now.Sub(at)})
	}
	ctx, cancel := context.WithTimeout(m.ctx, 5*m.o.Tick)
	defer cancel()
	if _, err := m.o.Meta.Propose(ctx, EncodeRenew(m.o.Self, now.UnixMilli(), rs)); err != nil {
		if m.ctx.Err() == nil {
			m.o.Log.Warn("session activity report failed; will report again", "sessions", len(rs), "err", err)
		}
		m.mu.Lock()
		m.mu.reportErr = err
		for id, at := range heard {
			if at.After(m.mu.active[id]) {
				m.mu.active[id] = at
			}
		}
		m.mu.Unlock()
		return
	}
	// Propose returns after this replica applied the renewal: a session it found closed, or
	// that another server took over, is no longer this server's to serve.
	m.mu.Lock()
	for id, at := range heard {
		if _, served := m.mu.heard[id]; !served {
			continue // its connection here ended meanwhile (Forget): no lease to move
		}
		e, ok := m.o.Table.Get(id)
		if !ok || e.Closing || e.Owner != m.o.Self {
			delete(m.mu.heard, id)
			continue
		}
		if at.After(m.mu.heard[id]) {
			m.mu.heard[id] = at
		}
	}
	m.mu.reportedAt, m.mu.reportErr = now, nil
	close(m.mu.renewed)
	m.mu.renewed = make(chan struct{})
	m.mu.Unlock()
}

// closingGrace is how long the meta shard's leader leaves a closing session to the server
// closing it before it cleans the session up itself (leaderDuties). A session the leader
// expires itself is cleaned up at once.
const closingGrace = 2 * time.Second

// leaderDuties expires overdue sessions and drives cleanup of closing ones.
//
// A session is overdue when a full timeout passed, on this server's monotonic clock, since
// its client was last heard as the renewals this replica applied tell (Table.Seen), and since
// this server became leader (a new leader grants everyone a full timeout). No other server's
// clock is compared with this one. The Expire carries the index the table had applied when the
// decision was made, and apply refuses it if a renewal committed after that index.
func (m *Manager) leaderDuties() {
	now := m.o.Now()
	m.mu.Lock()
	if m.mu.leaderSince.IsZero() {
		m.mu.leaderSince = now
	}
	grace := m.mu.leaderSince
	m.mu.Unlock()
	basis := m.o.Table.Applied()
	if m.closingSeen == nil {
		m.closingSeen = map[int64]time.Time{}
	}
	closing := map[int64]bool{}
	defer func() {
		for id := range m.closingSeen {
			if !closing[id] {
				delete(m.closingSeen, id) // cleaned (or gone): forget it
			}
		}
	}()
	closingIDs, overdue := m.o.Table.Due(now, grace)
	for _, id := range closingIDs {
		// A client's close is finished by its own server, which records the session cleaned
		// once its data shards are closed; cleaning it here as well, while that runs, only
		// repeats the work (fenced, on every shard). So a closing session is cleaned up here
		// once it has been closing for closingGrace: its server stopped, or its cleaned record
		// was lost.
		closing[id] = true
		seen, ok := m.closingSeen[id]
		if !ok {
			seen = now
			m.closingSeen[id] = now
		}
		if now.Sub(seen) >= closingGrace {
			m.startCleanup(id)
		}
	}
	for _, e := range overdue {
		ctx, cancel := context.WithTimeout(m.ctx, 5*m.o.Tick)
		res, err := m.o.Meta.Propose(ctx, EncodeExpire(e.ID, basis))
		cancel()
		if err != nil {
			m.o.Log.Warn("session expiry proposal failed", "session", hexID(e.ID), "err", err)
			continue
		}
		if res == ResultOK {
			m.expired.Add(1)
			m.o.Log.Info("session expired", "session", hexID(e.ID), "timeout_ms", e.Timeout)
			m.startCleanup(e.ID)
		}
	}
}

func (m *Manager) startCleanup(id int64) {
	m.mu.Lock()
	if m.mu.cleaning[id] {
		m.mu.Unlock()
		return
	}
	m.mu.cleaning[id] = true
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
		err := m.cleanup(ctx, id, true)
		cancel()
		if err != nil && m.ctx.Err() == nil {
			m.o.Log.Warn("session cleanup failed; will retry", "session", hexID(id), "err", err)
		}
		m.mu.Lock()
		delete(m.mu.cleaning, id)
		m.mu.Unlock()
	}()
}

func hexID(id int64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(id))
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 18)
	out = append(out, '0', 'x')
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
