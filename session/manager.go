package session

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync"
	"time"
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
	// CloseOnShards removes the session's ephemerals on every data shard; it returns when all
	// shards applied OpCloseSession (idempotent) or with an error.
	CloseOnShards func(ctx context.Context, id int64) error
	Log           *slog.Logger
	Now           func() time.Time
}

// ErrExpired reports a session that is unknown, closing or has a wrong password.
var ErrExpired = errors.New("session: expired or unknown")

// Manager runs this server's part of session management: creating and validating sessions,
// reporting activity, and — while this server leads the meta shard — deciding expiry and driving
// ephemeral cleanup. Stop it with Stop.
type Manager struct {
	o  Options
	mu struct {
		sync.Mutex
		active      map[int64]struct{}
		nextID      int64
		leaderSince time.Time
		cleaning    map[int64]bool
	}
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
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
	m := &Manager{o: o}
	m.mu.active = map[int64]struct{}{}
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
	m.stop()
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
		res, err := m.o.Meta.Propose(ctx, EncodeCreate(Entry{ID: id, Passwd: pw, Timeout: timeout,
			Owner: m.o.Self, LastSeen: m.o.Now().UnixMilli()}))
		if err != nil {
			return 0, nil, err
		}
		if res == ResultOK {
			return id, pw, nil
		}
		// ResultExists after a retried proposal: the first attempt went through.
		if e, ok := m.o.Table.Get(id); ok && subtle.ConstantTimeCompare(e.Passwd, pw) == 1 {
			return id, pw, nil
		}
	}
	return 0, nil, ErrExists
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

// Touch records activity of a session on this server; it is reported at the next tick.
func (m *Manager) Touch(id int64) {
	m.mu.Lock()
	m.mu.active[id] = struct{}{}
	m.mu.Unlock()
}

// TakeOver reports activity now, making this server the session's owner before it returns.
func (m *Manager) TakeOver(ctx context.Context, id int64) error {
	_, err := m.o.Meta.Propose(ctx, EncodeTakeOver(m.o.Self, m.o.Now().UnixMilli(), []int64{id}))
	return err
}

// Close ends a session (client closeSession) and removes its ephemerals on every shard.
func (m *Manager) Close(ctx context.Context, id int64) error {
	if _, err := m.o.Meta.Propose(ctx, EncodeClose(id, m.o.Now().UnixMilli(), false)); err != nil {
		return err
	}
	return m.cleanup(ctx, id)
}

func (m *Manager) cleanup(ctx context.Context, id int64) error {
	if err := m.o.CloseOnShards(ctx, id); err != nil {
		return err
	}
	_, err := m.o.Meta.Propose(ctx, EncodeCleaned(id))
	return err
}

func (m *Manager) loop() {
	defer m.wg.Done()
	t := time.NewTicker(m.o.Tick)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		m.reportActivity()
		if m.o.Meta.IsLeader() {
			m.leaderDuties()
		} else {
			m.mu.Lock()
			m.mu.leaderSince = time.Time{}
			m.mu.Unlock()
		}
	}
}

func (m *Manager) reportActivity() {
	m.mu.Lock()
	if len(m.mu.active) == 0 {
		m.mu.Unlock()
		return
	}
	ids := make([]int64, 0, len(m.mu.active))
	for id := range m.mu.active {
		ids = append(ids, id)
	}
	m.mu.active = map[int64]struct{}{}
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(m.ctx, 5*m.o.Tick)
	defer cancel()
	if _, err := m.o.Meta.Propose(ctx, EncodeTouch(m.o.Self, m.o.Now().UnixMilli(), ids)); err != nil {
		m.o.Log.Warn("session activity report failed; will report again", "sessions", len(ids), "err", err)
		m.mu.Lock()
		for _, id := range ids {
			m.mu.active[id] = struct{}{}
		}
		m.mu.Unlock()
	}
}

// leaderDuties expires overdue sessions and drives cleanup of closing ones.
func (m *Manager) leaderDuties() {
	now := m.o.Now()
	m.mu.Lock()
	if m.mu.leaderSince.IsZero() {
		m.mu.leaderSince = now
	}
	grace := m.mu.leaderSince.UnixMilli()
	m.mu.Unlock()
	for _, e := range m.o.Table.List() {
		if e.Closing {
			m.startCleanup(e.ID)
			continue
		}
		last := e.LastSeen
		if grace > last {
			last = grace // a new leader grants everyone a full timeout
		}
		if last+int64(e.Timeout) >= now.UnixMilli() {
			continue
		}
		ctx, cancel := context.WithTimeout(m.ctx, 5*m.o.Tick)
		res, err := m.o.Meta.Propose(ctx, EncodeClose(e.ID, now.UnixMilli(), true))
		cancel()
		if err != nil {
			m.o.Log.Warn("session expiry proposal failed", "session", hexID(e.ID), "err", err)
			continue
		}
		if res == ResultOK {
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
		err := m.cleanup(ctx, id)
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
