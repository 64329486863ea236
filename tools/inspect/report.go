package inspect

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/corral/corral/router"
	"github.com/corral/corral/shard"
)

// Report is what Inspect finds in a data directory.
type Report struct {
	DataDir    string
	DataLogDir string
	MyID       uint64
	Meta       *MetaReport // nil when the meta shard's Raft log was not found
	MetaErr    error       // why the meta shard could not be read, when it could not
	Shards     []ShardReport
	Sessions   []Session // by id: the meta shard's table, else what the data shards record
	// SessionsFromMeta tells where Sessions came from: the meta shard's table (true), or the
	// data shards' ephemeral owners and ownership epochs (false: sessions that never wrote are
	// missing, timeouts unknown).
	SessionsFromMeta bool
	Mounts           []router.Mount // corral.mount.* of the zoo.cfg, when one was given
}

// ShardReport is one data shard replica's store.
type ShardReport struct {
	ID       uint64
	Kind     string // "root" or "data"
	Tag      uint8
	Applied  uint64 // the store's applied Raft index
	LastZxid int64
	Znodes   int
	Bytes    int64     // data bytes of all znodes
	Subtrees []Subtree // largest data first
	Routes   []shard.Route
	Added    []shard.AddedShard
	Prepared bool // a cross-shard transaction is prepared (decided on restart)
}

// Subtree is the size of one top-level subtree on a shard ("/" counts the root node alone).
type Subtree struct {
	Path   string
	Znodes int
	Bytes  int64
}

// Session is one session: its entry in the table when known, the ephemerals and ownership
// epochs the data shards record.
type Session struct {
	ID         int64
	Timeout    int32 // ms; 0 when unknown
	Owner      uint64
	Closing    bool
	Ephemerals int
	Epoch      uint64 // largest ownership epoch recorded on a data shard
}

// Inspect reads the data directory that o names. It refuses a directory a running server
// holds (ErrRunning) and never writes.
func Inspect(o Options) (*Report, error) {
	l, err := Resolve(o)
	if err != nil {
		return nil, err
	}
	if err := l.CheckStopped(); err != nil {
		return nil, err
	}
	rep := &Report{DataDir: l.DataDir, DataLogDir: l.DataLogDir, MyID: l.MyID}
	if l.cfg != nil {
		rep.Mounts = l.cfg.Mounts
	}
	ids, err := l.ShardIDs()
	if err != nil {
		return nil, err
	}
	sessions := map[int64]*Session{}
	sess := func(id int64) *Session {
		s := sessions[id]
		if s == nil {
			s = &Session{ID: id}
			sessions[id] = s
		}
		return s
	}
	closed := map[int64]bool{}
	for _, id := range ids {
		st, err := l.openStore(id)
		if err != nil {
			return nil, err
		}
		sr, err := st.summarize(sess)
		if err == nil {
			var owners map[int64]uint64
			var tombs map[int64]int64
			owners, tombs, err = st.r.Sessions()
			for sid, e := range owners {
				if s := sess(sid); e > s.Epoch {
					s.Epoch = e
				}
			}
			for sid := range tombs {
				closed[sid] = true
			}
		}
		st.Close()
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", id, err)
		}
		rep.Shards = append(rep.Shards, sr)
	}
	rep.Meta, rep.MetaErr = l.readMeta()
	if rep.Meta != nil {
		rep.SessionsFromMeta = true
		for _, e := range rep.Meta.Sessions {
			s := sess(e.ID)
			s.Timeout, s.Owner, s.Closing = e.Timeout, e.Owner, e.Closing
		}
		for sid, s := range sessions {
			if s.Timeout == 0 && s.Ephemerals == 0 {
				delete(sessions, sid) // an ownership epoch of a session the table dropped
			}
		}
	} else {
		for sid := range closed {
			if s := sessions[sid]; s != nil && s.Ephemerals == 0 {
				delete(sessions, sid)
			}
		}
	}
	for _, s := range sessions {
		rep.Sessions = append(rep.Sessions, *s)
	}
	sort.Slice(rep.Sessions, func(i, j int) bool { return rep.Sessions[i].ID < rep.Sessions[j].ID })
	return rep, nil
}

// summarize counts the store's znodes and data bytes per top-level subtree and its ephemerals
// per session.
func (st *store) summarize(sess func(int64) *Session) (ShardReport, error) {
	sr := ShardReport{ID: st.id, Kind: "data", Tag: st.info.Tag, Applied: st.info.Applied, LastZxid: st.info.LastZxid,
		Routes: st.info.Routes, Added: st.info.Added, Prepared: st.info.Prepared}
	if st.info.OwnsRoot {
		sr.Kind = "root"
	}
	by := map[string]*Subtree{}
	err := st.r.Walk("/", func(path string, n shard.NodeInfo) error {
		top := path
		if i := strings.IndexByte(path[1:], '/'); i >= 0 {
			top = path[:i+1]
		}
		t := by[top]
		if t == nil {
			t = &Subtree{Path: top}
			by[top] = t
		}
		t.Znodes++
		t.Bytes += int64(len(n.Data()))
		if n.IsEphemeral() {
			sess(n.EphemeralOwner()).Ephemerals++
		}
		return nil
	})
	for _, t := range by {
		sr.Subtrees = append(sr.Subtrees, *t)
		sr.Znodes += t.Znodes
		sr.Bytes += t.Bytes
	}
	sortSubtrees(sr.Subtrees)
	return sr, err
}

func sortSubtrees(ts []Subtree) {
	sort.Slice(ts, func(i, j int) bool {
		a, b := ts[i], ts[j]
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		if a.Znodes != b.Znodes {
			return a.Znodes > b.Znodes
		}
		return a.Path < b.Path
	})
}

// Subtrees returns the top-level subtrees over all shards, largest data first.
func (r *Report) Subtrees() []Subtree {
	by := map[string]*Subtree{}
	for _, s := range r.Shards {
		for _, t := range s.Subtrees {
			if by[t.Path] == nil {
				by[t.Path] = &Subtree{Path: t.Path}
			}
			by[t.Path].Znodes += t.Znodes
			by[t.Path].Bytes += t.Bytes
		}
	}
	var out []Subtree
	for _, t := range by {
		out = append(out, *t)
	}
	sortSubtrees(out)
	return out
}

var errNoShards = errors.New("no shard stores found")
