package shard

import "github.com/google/btree"

// Closed-session tombstones. After OpCloseSession the shard refuses ephemeral creates for the
// session (SESSIONEXPIRED), so a create that was proposed before the close but applied after it
// cannot leave an ephemeral behind. Tombstones expire after tombstoneTTL of batch time: by then
// no proposal made while the session was alive can still be in flight.
const tombstoneTTL = 24 * 60 * 60 * 1000

type tomb struct {
	time    int64
	session int64
}

func tombLess(a, b tomb) bool {
	if a.time != b.time {
		return a.time < b.time
	}
	return a.session < b.session
}

type tombstones struct {
	bySession map[int64]int64 // session -> close time
	byTime    *btree.BTreeG[tomb]
}

func newTombstones() tombstones {
	return tombstones{bySession: make(map[int64]int64), byTime: btree.NewG(8, tombLess)}
}

func (t *tombstones) has(session int64) bool {
	_, ok := t.bySession[session]
	return ok
}

// add records (or refreshes to the later time) the tombstone of session.
func (t *tombstones) add(session, time int64) bool {
	if old, ok := t.bySession[session]; ok {
		if time <= old {
			return false
		}
		t.byTime.Delete(tomb{old, session})
	}
	t.bySession[session] = time
	t.byTime.ReplaceOrInsert(tomb{time, session})
	return true
}

// expire removes the tombstones closed before cutoff and calls fn for each.
func (t *tombstones) expire(cutoff int64, fn func(session int64)) {
	for {
		m, ok := t.byTime.Min()
		if !ok || m.time >= cutoff {
			return
		}
		t.byTime.DeleteMin()
		delete(t.bySession, m.session)
		fn(m.session)
	}
}

func (s *State) addTombstone(session, time int64) {
	if s.tombstones.add(session, time) && s.track {
		s.dirty.tombstones[session] = struct{}{}
	}
}

func (s *State) expireTombstones(now int64) {
	s.tombstones.expire(now-tombstoneTTL, func(session int64) {
		if s.track {
			s.dirty.tombstones[session] = struct{}{}
		}
	})
}
