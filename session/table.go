package session

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/corral/corral/format"
)

// Errors of the session package.
var (
	ErrMalformed = errors.New("session: malformed command")
	ErrExists    = errors.New("session: session id already exists")
	ErrNotFound  = errors.New("session: no such session")
	// ErrLevel stops a replica asked to apply a format level its binary cannot read: the
	// ensemble moved past this binary (a server of an older version started, or joined, after
	// the upgrade was completed). It must be upgraded; it cannot go on without misreading what
	// the other servers write.
	ErrLevel = errors.New("session: the ensemble's format level is beyond this binary")
)

// Entry is one session as the table holds it.
type Entry struct {
	ID       int64
	Passwd   []byte
	Timeout  int32 // negotiated, milliseconds
	Owner    uint64
	LastSeen int64 // stamped Unix ms of the last reported activity
	Closing  bool
	// Renewed is the Raft index of the last applied command that renewed the session (its
	// Create, a Touch, Renew or TakeOver). An Expire decided on a table that had applied up to
	// index B closes the session only if Renewed <= B: a renewal committed between the decision
	// and the Expire wins, without comparing any clocks.
	Renewed uint64
}

// Command kinds.
const (
	cmdCreate  byte = 1
	cmdTouch   byte = 2
	cmdClose   byte = 3
	cmdCleaned byte = 4
	// cmdTakeOver is a Touch that also makes its sender the owner. Plain activity reports never
	// change the owner: a report of activity a server saw just before the session moved away
	// can be applied after the new server's take-over, and must not take the session back (the
	// new server would then close the client's fresh connection as "moved").
	cmdTakeOver byte = 5
	// cmdRenew reports activity per session with its age: the session's client was last heard
	// ageMs before the command's stamped time. It never changes the owner (see cmdTakeOver).
	cmdRenew byte = 6
	// cmdExpire closes a session unless it was renewed after the index the expiry was decided
	// on (see Entry.Renewed).
	cmdExpire byte = 7
	// cmdAnnounce records the highest format level a server's binary reads (package format).
	cmdAnnounce byte = 8
	// cmdSetLevel raises the ensemble's active format level; the meta leader proposes it once
	// every member announced at least that level (format.Next).
	cmdSetLevel byte = 9
)

// Result values of applied commands.
const (
	ResultOK       uint64 = 0
	ResultExists   uint64 = 1
	ResultNotFound uint64 = 2
	ResultClosing  uint64 = 3
	ResultAlive    uint64 = 4 // Close with a deadline check found the session alive
)

// EncodeCreate encodes a Create command.
func EncodeCreate(e Entry) []byte {
	b := []byte{cmdCreate}
	b = binary.BigEndian.AppendUint64(b, uint64(e.ID))
	b = binary.BigEndian.AppendUint32(b, uint32(e.Timeout))
	b = binary.BigEndian.AppendUint64(b, e.Owner)
	b = binary.BigEndian.AppendUint64(b, uint64(e.LastSeen))
	b = append(b, byte(len(e.Passwd)))
	return append(b, e.Passwd...)
}

// EncodeTouch encodes a Touch command: owner saw activity on ids at time now.
func EncodeTouch(owner uint64, now int64, ids []int64) []byte {
	return encodeActivity(cmdTouch, owner, now, ids)
}

// EncodeTakeOver encodes a TakeOver command: owner serves the sessions ids from now on. Its
// result is the command's Raft index: the owner's new ownership epoch of the sessions.
func EncodeTakeOver(owner uint64, now int64, ids []int64) []byte {
	return encodeActivity(cmdTakeOver, owner, now, ids)
}

func encodeActivity(cmd byte, owner uint64, now int64, ids []int64) []byte {
	b := make([]byte, 0, 1+8+8+4+8*len(ids))
	b = append(b, cmd)
	b = binary.BigEndian.AppendUint64(b, owner)
	b = binary.BigEndian.AppendUint64(b, uint64(now))
	b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
	}
	return b
}

// Renewal is one session of a Renew command: its client was last heard Age before the stamp.
type Renewal struct {
	ID  int64
	Age time.Duration
}

// EncodeRenew encodes a Renew command: owner heard the sessions' clients, each Age before now.
func EncodeRenew(owner uint64, now int64, rs []Renewal) []byte {
	b := make([]byte, 0, 1+8+8+4+12*len(rs))
	b = append(b, cmdRenew)
	b = binary.BigEndian.AppendUint64(b, owner)
	b = binary.BigEndian.AppendUint64(b, uint64(now))
	b = binary.BigEndian.AppendUint32(b, uint32(len(rs)))
	for _, r := range rs {
		b = binary.BigEndian.AppendUint64(b, uint64(r.ID))
		b = binary.BigEndian.AppendUint32(b, uint32(min(max(r.Age.Milliseconds(), 0), math.MaxUint32)))
	}
	return b
}

// EncodeExpire encodes an Expire command: the meta leader found the session overdue on a table
// that had applied everything up to index basis.
func EncodeExpire(id int64, basis uint64) []byte {
	b := binary.BigEndian.AppendUint64([]byte{cmdExpire}, uint64(id))
	return binary.BigEndian.AppendUint64(b, basis)
}

// EncodeAnnounce encodes an Announce command: server's binary reads up to level.
func EncodeAnnounce(server uint64, level format.Level) []byte {
	b := binary.BigEndian.AppendUint64([]byte{cmdAnnounce}, server)
	return binary.BigEndian.AppendUint32(b, uint32(level))
}

// EncodeSetLevel encodes a SetLevel command.
func EncodeSetLevel(level format.Level) []byte {
	return binary.BigEndian.AppendUint32([]byte{cmdSetLevel}, uint32(level))
}

// EncodeClose encodes a Close command. With expireCheck, the session is closed only if its
// deadline (LastSeen+Timeout) is before now; otherwise the result is ResultAlive.
func EncodeClose(id int64, now int64, expireCheck bool) []byte {
	b := []byte{cmdClose}
	b = binary.BigEndian.AppendUint64(b, uint64(id))
	b = binary.BigEndian.AppendUint64(b, uint64(now))
	if expireCheck {
		return append(b, 1)
	}
	return append(b, 0)
}

// EncodeCleaned encodes a Cleaned command.
func EncodeCleaned(id int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{cmdCleaned}, uint64(id))
}

// Change is a table change the local server reacts to.
type Change struct {
	ID       int64
	Owner    uint64 // the owner after the change
	Closing  bool
	OwnerWas uint64
}

// Table is the replicated session table (a dragonboat IStateMachine). Get and List may be called
// concurrently with Update.
//
// Besides the replicated entries, every replica keeps one local fact per session: the time on
// its own monotonic clock at which the session's client was last heard, as far as the renewals
// this replica applied tell (Seen). It is not part of the replicated state (a replica restored
// from a snapshot sets it to the restore time, later than the truth); only the meta leader's
// expiry decision reads it, and Expire's apply re-checks that decision deterministically.
//
// The table also holds the ensemble's format level (package format): the level each server
// announced, and the active level, which only SetLevel raises.
type Table struct {
	onChange  func(Change)
	now       func() time.Time // monotonic clock for Seen (tests replace it)
	supported format.Level     // the highest level this binary reads (tests lower it)
	mu        struct {
		sync.RWMutex
		sessions  map[int64]*Entry
		seen      map[int64]time.Time
		epochs    map[int64]uint64 // local memory: see OwnerEpoch
		applied   uint64
		level     format.Level
		announced map[uint64]format.Level
	}
}

// NewTable returns an empty table; onChange (may be nil) is called synchronously from Update for
// owner changes and closes; it must not block.
func NewTable(onChange func(Change)) *Table {
	t := &Table{onChange: onChange, now: time.Now, supported: format.Supported}
	t.mu.sessions = map[int64]*Entry{}
	t.mu.seen = map[int64]time.Time{}
	t.mu.epochs = map[int64]uint64{}
	t.mu.level = format.Level1
	t.mu.announced = map[uint64]format.Level{}
	return t
}

// Level returns the ensemble's active format level, as far as this replica applied.
func (t *Table) Level() format.Level {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.mu.level
}

// Announced returns the format level each server announced.
func (t *Table) Announced() map[uint64]format.Level {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return maps.Clone(t.mu.announced)
}

// Seen returns the local monotonic time at which the session's client was last heard, by the
// renewals this replica applied (or when this replica loaded the session from a snapshot).
func (t *Table) Seen(id int64) (time.Time, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s, ok := t.mu.seen[id]
	return s, ok
}

// OwnerEpoch returns the ownership epoch of the session's latest owner (docs/design.md §4,
// rule 6): CreatedEpoch if no take-over of it was applied since its create, else the Raft index
// of the latest take-over applied. It is known only for sessions whose create or latest
// take-over this replica applied from the log (local memory, not in snapshots: a replica that
// loaded a snapshot since knows nothing of the session's earlier owners), and is gone once the
// session is cleaned. Once the session's close is applied, the answer is final: a closing
// session is taken over no more.
func (t *Table) OwnerEpoch(id int64) (uint64, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.mu.epochs[id]
	return e, ok
}

// Applied returns the Raft index of the last applied command.
func (t *Table) Applied() uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.mu.applied
}

// renewLocked marks a live entry renewed at index, its client heard age before now.
func (t *Table) renewLocked(e *Entry, index uint64, age time.Duration) {
	e.Renewed = index
	at := t.now().Add(-age)
	if at.After(t.mu.seen[e.ID]) {
		t.mu.seen[e.ID] = at
	}
}

// Get returns a copy of the session's entry.
func (t *Table) Get(id int64) (Entry, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.mu.sessions[id]
	if !ok {
		return Entry{}, false
	}
	return *e, true
}

// List returns copies of all entries sorted by id.
func (t *Table) List() []Entry {
	t.mu.RLock()
	out := make([]Entry, 0, len(t.mu.sessions))
	for _, e := range t.mu.sessions {
		out = append(out, *e)
	}
	t.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Due returns what the meta shard's leader acts on, read under one lock without copying the
// table: the closing sessions' ids, and the live sessions whose client was last heard (Seen,
// or since when that is later) more than their timeout before now. Both are sorted by id.
func (t *Table) Due(now, since time.Time) (closing []int64, overdue []Entry) {
	t.mu.RLock()
	for id, e := range t.mu.sessions {
		if e.Closing {
			closing = append(closing, id)
			continue
		}
		last := since
		if s, ok := t.mu.seen[id]; ok && s.After(last) {
			last = s
		}
		if now.Sub(last) > time.Duration(e.Timeout)*time.Millisecond {
			overdue = append(overdue, *e)
		}
	}
	t.mu.RUnlock()
	slices.Sort(closing)
	slices.SortFunc(overdue, func(a, b Entry) int { return cmp.Compare(a.ID, b.ID) })
	return closing, overdue
}

// Len returns the number of sessions (closing ones included).
func (t *Table) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.mu.sessions)
}

// Update applies one command.
func (t *Table) Update(ent sm.Entry) (sm.Result, error) {
	v, changes, err := t.apply(ent.Cmd, ent.Index)
	if err != nil {
		return sm.Result{}, err
	}
	if t.onChange != nil {
		for _, c := range changes {
			t.onChange(c)
		}
	}
	return sm.Result{Value: v}, nil
}

func (t *Table) apply(cmd []byte, index uint64) (uint64, []Change, error) {
	if len(cmd) == 0 {
		return 0, nil, ErrMalformed
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mu.applied = index
	body := cmd[1:]
	switch cmd[0] {
	case cmdCreate:
		if len(body) < 29 {
			return 0, nil, ErrMalformed
		}
		e := &Entry{
			ID:       int64(binary.BigEndian.Uint64(body)),
			Timeout:  int32(binary.BigEndian.Uint32(body[8:])),
			Owner:    binary.BigEndian.Uint64(body[12:]),
			LastSeen: int64(binary.BigEndian.Uint64(body[20:])),
		}
		n := int(body[28])
		if len(body) < 29+n {
			return 0, nil, ErrMalformed
		}
		e.Passwd = append([]byte(nil), body[29:29+n]...)
		if _, ok := t.mu.sessions[e.ID]; ok {
			return ResultExists, nil, nil
		}
		t.mu.sessions[e.ID] = e
		t.mu.epochs[e.ID] = CreatedEpoch
		t.renewLocked(e, index, 0)
		return ResultOK, nil, nil
	case cmdTouch, cmdTakeOver:
		if len(body) < 20 {
			return 0, nil, ErrMalformed
		}
		owner := binary.BigEndian.Uint64(body)
		now := int64(binary.BigEndian.Uint64(body[8:]))
		n := int(binary.BigEndian.Uint32(body[16:]))
		if len(body) != 20+8*n {
			return 0, nil, ErrMalformed
		}
		var changes []Change
		for i := 0; i < n; i++ {
			id := int64(binary.BigEndian.Uint64(body[20+8*i:]))
			e, ok := t.mu.sessions[id]
			if !ok || e.Closing {
				continue
			}
			if now > e.LastSeen {
				e.LastSeen = now
			}
			t.renewLocked(e, index, 0)
			if cmd[0] == cmdTakeOver {
				t.mu.epochs[id] = index // the command's result (below)
			}
			if cmd[0] == cmdTakeOver && e.Owner != owner {
				changes = append(changes, Change{ID: id, Owner: owner, OwnerWas: e.Owner})
				e.Owner = owner
			}
		}
		if cmd[0] == cmdTakeOver {
			// The result is the sender's ownership epoch of the sessions (shard.Op.Epoch): the
			// index grows with every take-over. Results are not replicated state.
			return index, changes, nil
		}
		return ResultOK, changes, nil
	case cmdRenew:
		if len(body) < 20 {
			return 0, nil, ErrMalformed
		}
		now := int64(binary.BigEndian.Uint64(body[8:]))
		n := int(binary.BigEndian.Uint32(body[16:]))
		if len(body) != 20+12*n {
			return 0, nil, ErrMalformed
		}
		for i := 0; i < n; i++ {
			r := body[20+12*i:]
			id := int64(binary.BigEndian.Uint64(r))
			age := int64(binary.BigEndian.Uint32(r[8:]))
			e, ok := t.mu.sessions[id]
			if !ok || e.Closing {
				continue
			}
			if now-age > e.LastSeen {
				e.LastSeen = now - age
			}
			t.renewLocked(e, index, time.Duration(age)*time.Millisecond)
		}
		return ResultOK, nil, nil
	case cmdExpire:
		if len(body) != 16 {
			return 0, nil, ErrMalformed
		}
		id := int64(binary.BigEndian.Uint64(body))
		basis := binary.BigEndian.Uint64(body[8:])
		e, ok := t.mu.sessions[id]
		switch {
		case !ok:
			return ResultNotFound, nil, nil
		case e.Closing:
			return ResultClosing, nil, nil
		case e.Renewed > basis:
			return ResultAlive, nil, nil
		}
		e.Closing = true
		return ResultOK, []Change{{ID: id, Owner: e.Owner, OwnerWas: e.Owner, Closing: true}}, nil
	case cmdClose:
		if len(body) < 17 {
			return 0, nil, ErrMalformed
		}
		id := int64(binary.BigEndian.Uint64(body))
		now := int64(binary.BigEndian.Uint64(body[8:]))
		check := body[16] == 1
		e, ok := t.mu.sessions[id]
		if !ok {
			return ResultNotFound, nil, nil
		}
		if e.Closing {
			return ResultClosing, nil, nil
		}
		if check && e.LastSeen+int64(e.Timeout) >= now {
			return ResultAlive, nil, nil
		}
		e.Closing = true
		return ResultOK, []Change{{ID: id, Owner: e.Owner, OwnerWas: e.Owner, Closing: true}}, nil
	case cmdCleaned:
		if len(body) < 8 {
			return 0, nil, ErrMalformed
		}
		id := int64(binary.BigEndian.Uint64(body))
		if e, ok := t.mu.sessions[id]; ok && e.Closing {
			delete(t.mu.sessions, id)
			delete(t.mu.seen, id)
			delete(t.mu.epochs, id)
			return ResultOK, nil, nil
		}
		return ResultNotFound, nil, nil
	case cmdAnnounce:
		if len(body) != 12 {
			return 0, nil, ErrMalformed
		}
		// The latest announcement stands, lower or not: a server started again on an older
		// binary before the upgrade was completed holds the level back again.
		t.mu.announced[binary.BigEndian.Uint64(body)] = format.Level(binary.BigEndian.Uint32(body[8:]))
		return ResultOK, nil, nil
	case cmdSetLevel:
		if len(body) != 4 {
			return 0, nil, ErrMalformed
		}
		l := format.Level(binary.BigEndian.Uint32(body))
		if l > t.supported {
			return 0, nil, fmt.Errorf("the ensemble moved to format %v, this binary reads up to %v; start this server with the newer binary the others run: %w", l, t.supported, ErrLevel)
		}
		if l > t.mu.level {
			t.mu.level = l
		}
		return ResultOK, nil, nil
	}
	return 0, nil, fmt.Errorf("%w: kind %d", ErrMalformed, cmd[0])
}

// Lookup returns the entry for an int64 session id query, nothing for nil (a read barrier).
func (t *Table) Lookup(q interface{}) (interface{}, error) {
	if id, ok := q.(int64); ok {
		e, found := t.Get(id)
		if !found {
			return nil, ErrNotFound
		}
		return e, nil
	}
	return nil, nil
}

// Snapshot layout. Version 1 is a bare sequence of entries (id, timeout, owner, lastSeen,
// closing, passwd) and starts with a session id's top byte, a server id (1..254) or nothing;
// version 2 starts with snapshotMagic and the version and adds Renewed after each entry;
// version 3 (format.Level1) puts the format level before the entries: the active level, the
// number of announcements, and each as (server id, level) in server id order.
const (
	snapshotMagic   = 0xFF
	snapshotVersion = 3
)

// SaveSnapshot writes the table.
func (t *Table) SaveSnapshot(w io.Writer, _ sm.ISnapshotFileCollection, _ <-chan struct{}) error {
	t.mu.RLock()
	b := []byte{snapshotMagic, snapshotVersion}
	b = binary.BigEndian.AppendUint32(b, uint32(t.mu.level))
	b = binary.BigEndian.AppendUint32(b, uint32(len(t.mu.announced)))
	for _, id := range slices.Sorted(maps.Keys(t.mu.announced)) {
		b = binary.BigEndian.AppendUint64(b, id)
		b = binary.BigEndian.AppendUint32(b, uint32(t.mu.announced[id]))
	}
	t.mu.RUnlock()
	for _, e := range t.List() {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ID))
		b = binary.BigEndian.AppendUint32(b, uint32(e.Timeout))
		b = binary.BigEndian.AppendUint64(b, e.Owner)
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastSeen))
		if e.Closing {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = append(b, byte(len(e.Passwd)))
		b = append(b, e.Passwd...)
		b = binary.BigEndian.AppendUint64(b, e.Renewed)
	}
	_, err := w.Write(b)
	return err
}

// RecoverFromSnapshot replaces the table with a snapshot's.
func (t *Table) RecoverFromSnapshot(r io.Reader, _ []sm.SnapshotFile, _ <-chan struct{}) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	version := 1
	if len(b) >= 2 && b[0] == snapshotMagic {
		version = int(b[1])
		if version < 2 || version > snapshotVersion {
			return fmt.Errorf("%w: snapshot version %d", ErrMalformed, b[1])
		}
		b = b[2:]
	}
	level, announced := format.Level1, map[uint64]format.Level{}
	if version >= 3 {
		if len(b) < 8 {
			return ErrMalformed
		}
		level = format.Level(binary.BigEndian.Uint32(b))
		n := int(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
		if len(b) < 12*n {
			return ErrMalformed
		}
		for i := 0; i < n; i++ {
			announced[binary.BigEndian.Uint64(b)] = format.Level(binary.BigEndian.Uint32(b[8:]))
			b = b[12:]
		}
		if level > t.supported {
			return fmt.Errorf("the snapshot is at format %v, this binary reads up to %v; start this server with the newer binary the others run: %w", level, t.supported, ErrLevel)
		}
	}
	m := map[int64]*Entry{}
	seen := map[int64]time.Time{}
	loaded := t.now()
	for len(b) > 0 {
		if len(b) < 30 {
			return ErrMalformed
		}
		e := &Entry{ID: int64(binary.BigEndian.Uint64(b)), Timeout: int32(binary.BigEndian.Uint32(b[8:])),
			Owner: binary.BigEndian.Uint64(b[12:]), LastSeen: int64(binary.BigEndian.Uint64(b[20:])), Closing: b[28] == 1}
		n := int(b[29])
		if len(b) < 30+n {
			return ErrMalformed
		}
		e.Passwd = append([]byte(nil), b[30:30+n]...)
		b = b[30+n:]
		if version >= 2 {
			if len(b) < 8 {
				return ErrMalformed
			}
			e.Renewed = binary.BigEndian.Uint64(b)
			b = b[8:]
		}
		m[e.ID] = e
		seen[e.ID] = loaded
	}
	t.mu.Lock()
	t.mu.sessions = m
	t.mu.seen = seen
	t.mu.epochs = map[int64]uint64{}
	t.mu.level = level
	t.mu.announced = announced
	t.mu.Unlock()
	return nil
}

// Close releases nothing; the table is in memory.
func (t *Table) Close() error { return nil }
