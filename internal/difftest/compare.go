package difftest

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
)

// Diff says where an oracle result and a candidate result disagree.
type Diff struct {
	Field  string // e.g. "err", "stat.cversion", "multi[1].err", "events"
	Reason string
}

func (d *Diff) Error() string { return d.Field + ": " + d.Reason }

// Comparator compares the results of one run, step by step. It carries the
// normalisation state that spans steps:
//
//   - zxids (czxid, mzxid, pzxid, reply zxids) are compared through a
//     bijection built on first sight: candidate zxid → oracle zxid must be
//     consistent in both directions and preserve order (if c1 < c2 then
//     o1 < o2), 0 maps only to 0;
//   - session ids (ephemeralOwner, raw steps' sessions) through a bijection
//     built on first sight, 0 only to 0;
//   - ctime/mtime are never compared across targets. On each side
//     separately, a zxid must always come with the same time (a txn has one
//     time, so czxid == mzxid implies ctime == mtime) and times must not go
//     backwards as zxids grow. Together with the zxid bijection this makes
//     "ctime == mtime" and time ordering agree wherever they are determined
//     by the operations, while ignoring millisecond collisions;
//   - everything else (versions, dataLength, numChildren, data, errors,
//     paths, sorted children, ACLs, event sequences) exactly.
//
// A Comparator is not safe for concurrent use.
type Comparator struct {
	zxids    bijection
	sessions bijection
	times    [2]timeline // [0] oracle, [1] candidate
	where    string      // current step label, for messages
}

// NewComparator returns a comparator with empty normalisation state.
func NewComparator() *Comparator {
	return &Comparator{
		zxids:    bijection{name: "zxid", ordered: true},
		sessions: bijection{name: "session id"},
	}
}

// PairSessions records that the candidate session cand corresponds to the
// oracle session oracle (a logical client's session on each side).
func (c *Comparator) PairSessions(oracle, cand int64) error {
	if err := c.sessions.match(cand, oracle, c.where); err != nil {
		return &Diff{Field: "session", Reason: err.Error()}
	}
	return nil
}

// Compare checks a candidate result against the oracle's for the step
// labelled where, learning zxid and session pairs as it goes. It returns nil
// if they agree.
func (c *Comparator) Compare(where string, oracle, cand Result) *Diff {
	c.where = where
	return c.result("", oracle, cand)
}

func (c *Comparator) result(f string, o, k Result) *Diff {
	if o.Err != k.Err {
		return diff(f+"err", "%q vs %q", o.Err, k.Err)
	}
	if o.Path != k.Path {
		return diff(f+"path", "%q vs %q", o.Path, k.Path)
	}
	if (o.Exists == nil) != (k.Exists == nil) || (o.Exists != nil && *o.Exists != *k.Exists) {
		return diff(f+"exists", "%v vs %v", fmtBoolPtr(o.Exists), fmtBoolPtr(k.Exists))
	}
	if (o.Data == nil) != (k.Data == nil) || !bytes.Equal(o.Data, k.Data) {
		return diff(f+"data", "%s vs %s", fmtData(o.Data), fmtData(k.Data))
	}
	if (o.Children == nil) != (k.Children == nil) || !slices.Equal(sorted(o.Children), sorted(k.Children)) {
		return diff(f+"children", "%q vs %q", sorted(o.Children), sorted(k.Children))
	}
	if (o.ACL == nil) != (k.ACL == nil) || !slices.Equal(o.ACL, k.ACL) {
		return diff(f+"acl", "%s vs %s", fmtACL(o.ACL), fmtACL(k.ACL))
	}
	if d := c.stat(f+"stat", o.Stat, k.Stat); d != nil {
		return d
	}
	if (o.Multi == nil) != (k.Multi == nil) || len(o.Multi) != len(k.Multi) {
		return diff(f+"multi", "%d vs %d op results", len(o.Multi), len(k.Multi))
	}
	for i := range o.Multi {
		if d := c.result(fmt.Sprintf("%smulti[%d].", f, i), o.Multi[i], k.Multi[i]); d != nil {
			return d
		}
	}
	if (o.Events == nil) != (k.Events == nil) || !slices.Equal(o.Events, k.Events) {
		return diff(f+"events", "%v vs %v", o.Events, k.Events)
	}
	if d := c.zxid(f+"zxid", o.Zxid, k.Zxid); d != nil {
		return d
	}
	if err := c.sessions.match(k.Session, o.Session, c.where); err != nil {
		return diff(f+"session", "%v", err)
	}
	if !slices.Equal(o.Values, k.Values) {
		return diff(f+"values", "%q vs %q", o.Values, k.Values)
	}
	return nil
}

func (c *Comparator) stat(f string, o, k *Stat) *Diff {
	if (o == nil) != (k == nil) {
		return diff(f, "%v vs %v", o, k)
	}
	if o == nil {
		return nil
	}
	exact := []struct {
		name string
		o, k int32
	}{
		{"version", o.Version, k.Version},
		{"cversion", o.Cversion, k.Cversion},
		{"aversion", o.Aversion, k.Aversion},
		{"dataLength", o.DataLength, k.DataLength},
		{"numChildren", o.NumChildren, k.NumChildren},
	}
	for _, e := range exact {
		if e.o != e.k {
			return diff(f+"."+e.name, "%d vs %d", e.o, e.k)
		}
	}
	if d := c.zxid(f+".czxid", o.Czxid, k.Czxid); d != nil {
		return d
	}
	if d := c.zxid(f+".mzxid", o.Mzxid, k.Mzxid); d != nil {
		return d
	}
	if d := c.zxid(f+".pzxid", o.Pzxid, k.Pzxid); d != nil {
		return d
	}
	if err := c.sessions.match(k.EphemeralOwner, o.EphemeralOwner, c.where); err != nil {
		return diff(f+".ephemeralOwner", "%v", err)
	}
	for side, s := range []*Stat{o, k} {
		name := [2]string{"oracle", "candidate"}[side]
		if err := c.times[side].add(s.Czxid, s.Ctime, c.where); err != nil {
			return diff(f+".ctime", "%s: %v", name, err)
		}
		if err := c.times[side].add(s.Mzxid, s.Mtime, c.where); err != nil {
			return diff(f+".mtime", "%s: %v", name, err)
		}
	}
	return nil
}

func (c *Comparator) zxid(f string, o, k int64) *Diff {
	if err := c.zxids.match(k, o, c.where); err != nil {
		return diff(f, "%v", err)
	}
	return nil
}

func diff(field, format string, args ...any) *Diff {
	return &Diff{Field: field, Reason: fmt.Sprintf(format, args...)}
}

func sorted(s []string) []string {
	if s == nil {
		return nil
	}
	c := append([]string{}, s...)
	sort.Strings(c)
	return c
}

func fmtBoolPtr(b *bool) string {
	if b == nil {
		return "unset"
	}
	return fmt.Sprint(*b)
}

// bijection pairs candidate values with oracle values on first sight. 0 is
// a fixed point. With ordered, pairs must also preserve <.
type bijection struct {
	name    string
	ordered bool
	c2o     map[int64]int64
	o2c     map[int64]int64
	seen    map[int64]string // candidate value → where it was first paired
	pairs   [][2]int64       // (cand, oracle), for the order check
}

func (b *bijection) match(cand, oracle int64, where string) error {
	if cand == 0 || oracle == 0 {
		if cand != oracle {
			return fmt.Errorf("%s %#x vs %#x (0 corresponds only to 0)", b.name, oracle, cand)
		}
		return nil
	}
	if b.c2o == nil {
		b.c2o, b.o2c, b.seen = map[int64]int64{}, map[int64]int64{}, map[int64]string{}
	}
	if o, ok := b.c2o[cand]; ok {
		if o != oracle {
			return fmt.Errorf("candidate %s %#x was paired with oracle %#x (%s), now oracle has %#x",
				b.name, cand, o, b.seen[cand], oracle)
		}
		return nil
	}
	if k, ok := b.o2c[oracle]; ok {
		return fmt.Errorf("oracle %s %#x was paired with candidate %#x (%s), now candidate has %#x",
			b.name, oracle, k, b.seen[k], cand)
	}
	if b.ordered {
		for _, p := range b.pairs {
			if (cand < p[0]) != (oracle < p[1]) {
				return fmt.Errorf("%s order differs: oracle %#x vs earlier %#x, candidate %#x vs earlier %#x (%s)",
					b.name, oracle, p[1], cand, p[0], b.seen[p[0]])
			}
		}
	}
	b.c2o[cand], b.o2c[oracle], b.seen[cand] = oracle, cand, where
	b.pairs = append(b.pairs, [2]int64{cand, oracle})
	return nil
}

// timeline holds one target's (zxid, time) observations.
type timeline struct {
	at    map[int64]int64 // zxid → time
	where map[int64]string
}

func (t *timeline) add(zxid, ms int64, where string) error {
	if zxid == 0 {
		return nil
	}
	if t.at == nil {
		t.at, t.where = map[int64]int64{}, map[int64]string{}
	}
	if prev, ok := t.at[zxid]; ok {
		if prev != ms {
			return fmt.Errorf("zxid %#x has time %d here but %d (%s)", zxid, ms, prev, t.where[zxid])
		}
		return nil
	}
	for z, m := range t.at {
		if (z < zxid && m > ms) || (z > zxid && m < ms) {
			return fmt.Errorf("time goes backwards: zxid %#x at %d, zxid %#x at %d (%s)", z, m, zxid, ms, t.where[z])
		}
	}
	t.at[zxid], t.where[zxid] = ms, where
	return nil
}
