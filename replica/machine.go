package replica

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/corral/corral/shard"
)

// Config configures one replica of a shard.
type Config struct {
	ShardID uint64
	// Tag is the low 8 bits of every zxid of the shard (unique among shards; same on replicas).
	Tag uint8
	// OwnsRoot: the shard starts with ZooKeeper's initial tree ("/", "/zookeeper", ...).
	OwnsRoot bool
	// Root is recorded in the shard's state and snapshots; every shard has "/". Which paths a
	// shard serves is the router's placement and mount table (docs/design.md §6, §9), not this.
	Root string
	// Dir is the replica's own data directory (pebble DBs and the `current` pointer file).
	Dir string
	// ExtendedTypes enables TTL nodes (zookeeper.extendedTypesEnabled).
	ExtendedTypes bool
	// Listener receives every published view; may be nil.
	Listener Listener
	// Taps, if set, answers this server's proposer's requests for views between the ops of
	// the batches it proposed (taps.go).
	Taps *shard.Taps
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// SyncDirty, when positive with RequestSync set, bounds the changed znodes a replica holds
	// in memory only: an Update that leaves at least SyncDirty of them calls RequestSync, which
	// asks dragonboat for a state sync (a snapshot of the on-disk state machine: Sync, then log
	// compaction) without waiting for corral.snapshotEntries entries. RequestSync is called on
	// the apply goroutine and must not block; it is called again after syncRequestRetry if no
	// Sync came.
	SyncDirty   int
	RequestSync func()

	hooks testHooks // test-only behaviours of corraltesting builds (testhooks.go)
}

func (c *Config) state() shard.StateConfig {
	return shard.StateConfig{Tag: c.Tag, OwnsRoot: c.OwnsRoot, Root: c.Root, ExtendedTypes: c.ExtendedTypes}
}

// Listener is told about every state the replica publishes.
//
// Applied is called synchronously on dragonboat's apply goroutine: once at the end of every
// Update, after the pebble batch is committed, with the new view and the events of all the
// Update's entries in apply order; and once after Open and after RecoverFromSnapshot, with no
// events. Calls for one shard never overlap. Applied must not block (hand events to a queue):
// the shard applies nothing while it runs. The view and events are immutable and may be kept.
type Listener interface {
	Applied(shardID uint64, v *shard.View, events []shard.Event)
}

// Machine is one replica of a shard as a dragonboat on-disk state machine
// (sm.IOnDiskStateMachine). The state lives in memory (shard.State) and in pebble; Update keeps both in
// step. Concurrency follows dragonboat's contract: Update, Sync, PrepareSnapshot,
// RecoverFromSnapshot and Close are mutually exclusive; Lookup and SaveSnapshot may run
// concurrently with them and touch only immutable data (the published view, a pebble snapshot).
type Machine struct {
	cfg Config
	log *slog.Logger

	// Owned by the apply goroutine (Open, Update, Sync, PrepareSnapshot, Recover, Close).
	db      *pebble.DB
	gen     int // generation of the current DB directory (db-<gen>)
	state   *shard.State
	applied uint64
	flushed uint64 // applied index last written to pebble

	view   atomic.Pointer[shard.View]
	closed atomic.Bool

	quotaLog quotaLogLimit // quota messages of apply (quota.go); apply goroutine only
	// syncAsked is when RequestSync was last called since the last Sync (zero: not asked).
	syncAsked time.Time

	// The store's figures (storestats.go): syncs and their time, the counters of stores a
	// recovery replaced (apply goroutine), and the published StoreStats.
	syncs    int64
	syncTime time.Duration
	retired  StoreStats
	stats    atomic.Pointer[StoreStats]

	// entries counts the log entries Update applied since the replica was created.
	entries atomic.Uint64
}

// Entries returns how many log entries this replica applied since it was created (a snapshot
// recovery adds none): the shard's write rate as seen here. Safe from any goroutine.
func (m *Machine) Entries() uint64 { return m.entries.Load() }

// syncRequestRetry is how long an Update waits for the Sync it asked for before asking again
// (a request dragonboat refused, or one that came while a snapshot was being taken).
const syncRequestRetry = time.Second

var _ sm.IOnDiskStateMachine = (*Machine)(nil)

// NewMachine returns a replica; dragonboat calls Open next.
func NewMachine(cfg Config) *Machine {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Machine{cfg: cfg, log: log.With("shard", cfg.ShardID)}
}

// CreateFunc adapts a per-replica Config factory to dragonboat's StartOnDiskReplica.
func CreateFunc(cfg func(shardID, replicaID uint64) Config) sm.CreateOnDiskStateMachineFunc {
	return func(shardID, replicaID uint64) sm.IOnDiskStateMachine {
		return NewMachine(cfg(shardID, replicaID))
	}
}

// View returns the last published view (nil before Open).
func (m *Machine) View() *shard.View { return m.view.Load() }

const currentFile = "current"

func dbDirName(gen int) string { return "db-" + strconv.Itoa(gen) }

// Open opens (or creates) the replica's store, loads it into memory, publishes the view and
// returns the persisted applied index. It removes DB directories left behind by an interrupted
// RecoverFromSnapshot.
func (m *Machine) Open(stopc <-chan struct{}) (uint64, error) {
	if err := os.MkdirAll(m.cfg.Dir, 0o755); err != nil {
		return 0, fmt.Errorf("shard: %w", err)
	}
	gen := 1
	if b, err := os.ReadFile(filepath.Join(m.cfg.Dir, currentFile)); err == nil {
		g, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(string(b)), "db-"))
		if err != nil {
			return 0, fmt.Errorf("%w: bad %s file %q", shard.ErrCorruptStore, currentFile, b)
		}
		gen = g
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("shard: %w", err)
	} else if err := writeCurrent(m.cfg.Dir, gen); err != nil {
		return 0, err
	}
	if err := removeStaleDBs(m.cfg.Dir, gen); err != nil {
		return 0, err
	}
	select {
	case <-stopc:
		return 0, sm.ErrOpenStopped
	default:
	}
	db, err := openDB(filepath.Join(m.cfg.Dir, dbDirName(gen)), m.log)
	if err != nil {
		return 0, err
	}
	s, applied, found, err := loadState(db, m.cfg.state())
	if err != nil {
		db.Close()
		return 0, err
	}
	if !found {
		s = shard.NewState(m.cfg.state())
		if err := initStore(db, s); err != nil {
			db.Close()
			return 0, err
		}
	}
	s.AttachReplica(m.cfg.Taps, m.cfg.ShardID)
	m.db, m.gen, m.state, m.applied, m.flushed = db, gen, s, applied, applied
	m.noteStats()
	m.publish(nil)
	m.log.Debug("shard opened", "dir", m.cfg.Dir, "applied", applied, "zxid", s.LastZxid(), "nodes", s.Len())
	return applied, nil
}

// publish stores a new view and tells the listener.
func (m *Machine) publish(events []shard.Event) {
	v := m.state.View(m.cfg.ShardID)
	m.view.Store(v)
	if m.cfg.Taps != nil {
		m.cfg.Taps.PublishedView(v)
	}
	if m.cfg.Listener != nil {
		m.cfg.Listener.Applied(m.cfg.ShardID, v, events)
	}
}

// Update applies the entries' batches in order to the in-memory tree (Sync writes them to
// pebble later, see below), sets each entry's Result (Value: the BatchStatus, Data: the encoded
// BatchResult) and publishes the view with all the entries' events.
//
// An entry that does not decode as a shard.Batch cannot come from Corral's proposers; Update returns
// ErrMalformedBatch, which dragonboat treats as fatal (the replica stops rather than diverge).
func (m *Machine) Update(ents []sm.Entry) ([]sm.Entry, error) {
	if m.closed.Load() {
		return nil, ErrClosed
	}
	if len(ents) == 0 {
		return ents, nil
	}
	var events []shard.Event
	ops := 0
	if m.cfg.Taps != nil {
		m.cfg.Taps.BeginUpdate()
	}
	for i := range ents {
		e := &ents[i]
		if e.Index <= m.applied {
			return nil, fmt.Errorf("%w: entry %d after %d", ErrIndexRegressed, e.Index, m.applied)
		}
		b, err := shard.DecodeBatch(e.Cmd)
		if err != nil {
			return nil, fmt.Errorf("shard %d entry %d: %w", m.cfg.ShardID, e.Index, err)
		}
		res, evs := m.state.Apply(&b)
		if msgs := m.state.TakeQuotaMessages(); len(msgs) > 0 {
			m.quotaLog.log(m.log, msgs)
		}
		ops += len(b.Ops)
		e.Result = sm.Result{Value: uint64(res.Status), Data: res.AppendTo(nil)}
		events = append(events, evs...)
		m.applied = e.Index
	}
	// Nothing is written to pebble here: the changes stay in the dirty set until Sync,
	// PrepareSnapshot or Close writes the current version of every changed node once (a node
	// set a thousand times between two syncs is written once). Until then the Raft log holds
	// them, and dragonboat compacts it only below the index of the last successful Sync.
	m.entries.Add(uint64(len(ents)))
	m.cfg.hooks.afterApply(ops)
	m.publish(events)
	m.askSync()
	return ents, nil
}

// askSync asks for a state sync when the replica holds SyncDirty changed znodes or more that
// only memory and the Raft log hold. A sync writes every one of them while the shard applies
// nothing (docs/storage.md, "The cost of a Sync"); left to the entry count, a bulk load's
// changes wait for it and then stall the shard for as long as they take to write.
func (m *Machine) askSync() {
	if m.cfg.RequestSync == nil || m.cfg.SyncDirty <= 0 || pendingNodes(m.state) < m.cfg.SyncDirty {
		return
	}
	now := time.Now()
	if !m.syncAsked.IsZero() && now.Sub(m.syncAsked) < syncRequestRetry {
		return
	}
	m.syncAsked = now
	m.cfg.RequestSync()
}

func pendingNodes(s *shard.State) int {
	n, _ := s.Pending()
	return n
}

// flushDirty writes every change since the last flush, with the applied index and the last
// zxid, in one pebble batch. Callers hold Update off (dragonboat runs Update, Sync,
// PrepareSnapshot and Close mutually exclusively).
func (m *Machine) flushDirty() error {
	if _, changed := m.state.Pending(); !changed && m.flushed == m.applied {
		return nil
	}
	wb := m.db.NewBatch()
	defer wb.Close()
	presize(wb, m.state.PendingBytes())
	writeChanges(wb, m.state, m.applied)
	if err := m.db.Apply(wb, pebble.NoSync); err != nil {
		return fmt.Errorf("shard %d: writing changes: %w", m.cfg.ShardID, err)
	}
	m.flushed = m.applied
	return nil
}

// Lookup returns the current *shard.View whatever the query (also after Close).
func (m *Machine) Lookup(query interface{}) (interface{}, error) {
	v := m.view.Load()
	if v == nil {
		return nil, ErrClosed
	}
	return v, nil
}

// Sync writes the changes since the last flush and flushes pebble's memtables, making every
// applied Update durable.
func (m *Machine) Sync() error {
	if m.closed.Load() {
		return ErrClosed
	}
	start := time.Now()
	nodes := pendingNodes(m.state)
	m.syncAsked = time.Time{}
	if err := m.flushDirty(); err != nil {
		return err
	}
	written := time.Since(start)
	// The store has no WAL: flushing the memtables makes applied state durable.
	if err := m.db.Flush(); err != nil {
		return err
	}
	d := time.Since(start)
	m.syncs++
	m.syncTime += d
	m.noteStats()
	// dragonboat applies nothing on this shard while Sync runs.
	if d >= slowSync {
		m.log.Info("slow state sync: the shard applied nothing meanwhile", "took", d.Round(time.Millisecond),
			"writing", written.Round(time.Millisecond), "nodes", nodes, "applied", m.applied)
	} else {
		m.log.Debug("state synced", "took", d.Round(time.Millisecond), "nodes", nodes, "applied", m.applied)
	}
	return nil
}

// slowSync is how long a Sync may take before it is logged.
const slowSync = 100 * time.Millisecond

// Close closes the store. Lookup keeps answering with the last view.
func (m *Machine) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	if m.db == nil {
		return nil
	}
	// Write and flush so a restart reopens at the last applied index instead of replaying from
	// the last Sync; a crash skips this and the Raft log covers the difference.
	ferr := m.flushDirty()
	if ferr == nil {
		ferr = m.db.Flush()
	}
	if err := m.db.Close(); err != nil {
		return err
	}
	return ferr
}

// writeCurrent atomically points the `current` file at db-<gen>.
func writeCurrent(dir string, gen int) error {
	tmp := filepath.Join(dir, currentFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	if _, err := io.WriteString(f, dbDirName(gen)+"\n"); err != nil {
		f.Close()
		return fmt.Errorf("shard: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("shard: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, currentFile)); err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	return nil
}

// removeStaleDBs deletes every db-* directory except db-<keep>.
func removeStaleDBs(dir string, keep int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "db-") && e.Name() != dbDirName(keep) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("shard: %w", err)
			}
		}
	}
	return nil
}
