package inspect

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteText prints the report for an operator; sessions lists every session.
func (r *Report) WriteText(w io.Writer, sessions bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("data directory\t%s\n", r.DataDir)
	if r.DataLogDir != "" {
		p("data log directory\t%s\n", r.DataLogDir)
	}
	if r.MyID != 0 {
		p("server id (myid)\t%d\n", r.MyID)
	} else {
		p("server id (myid)\tno myid file (a standalone server is 1)\n")
	}
	if m := r.Meta; m != nil {
		var ann []string
		for _, id := range slices.Sorted(maps.Keys(m.Announced)) {
			ann = append(ann, fmt.Sprintf("server %d reads %d", id, m.Announced[id]))
		}
		if len(ann) == 0 {
			ann = []string{"no server announced one yet"}
		}
		p("format level\t%d (%s)\n", m.Level, strings.Join(ann, ", "))
	} else {
		p("format level\tunknown (%v)\n", r.MetaErr)
	}
	p("\n")
	p("shard\tkind\ttag\tapplied index\tlast zxid\tznodes\tdata bytes\n")
	if m := r.Meta; m != nil {
		p("1\tmeta\t-\t%d\t-\t-\t-\n", m.Applied)
	}
	for _, s := range r.Shards {
		zxid := "-"
		if s.LastZxid != 0 {
			zxid = fmt.Sprintf("0x%x", uint64(s.LastZxid))
		}
		p("%d\t%s\t%d\t%d\t%s\t%d\t%d\n", s.ID, s.Kind, s.Tag, s.Applied, zxid, s.Znodes, s.Bytes)
	}
	for _, s := range r.Shards {
		if s.Prepared {
			p("shard %d holds a prepared cross-shard transaction (resolved when the servers start)\n", s.ID)
		}
	}
	if len(r.Shards) == 0 {
		p("(no shard stores under corral/shards)\n")
	}
	if m := r.Meta; m != nil {
		from := "its Raft log (no snapshot)"
		if m.SnapshotIndex > 0 {
			from = fmt.Sprintf("its snapshot at index %d and the Raft log after it", m.SnapshotIndex)
		}
		p("meta shard: the session table, rebuilt from %s, committed to %d\n", from, m.Committed)
	}
	for _, s := range r.Shards {
		if s.Znodes == 0 {
			continue
		}
		p("\nshard %d (%s): top-level subtrees, largest data first\n", s.ID, s.Kind)
		p("  subtree\tznodes\tdata bytes\n")
		for _, t := range s.Subtrees {
			p("  %s\t%d\t%d\n", t.Path, t.Znodes, t.Bytes)
		}
		p("  total\t%d\t%d\n", s.Znodes, s.Bytes)
	}
	var routes, added []string
	for _, s := range r.Shards {
		for _, rt := range s.Routes {
			dir := "moved to shard " + strconv.FormatUint(rt.To, 10)
			if rt.To == s.ID {
				dir = "lives here"
			}
			routes = append(routes, fmt.Sprintf("  shard %d: %s %s since zxid 0x%x\n", s.ID, rt.Path, dir, uint64(rt.Zxid)))
		}
		for _, a := range s.Added {
			added = append(added, fmt.Sprintf("  shard %d (tag %d): voters %s, observers %s\n", a.ID, a.Tag,
				orNone(idList(slices.Sorted(maps.Keys(a.Voters)))), orNone(idList(slices.Sorted(maps.Keys(a.NonVoting))))))
		}
	}
	if len(r.Mounts) > 0 {
		p("\nmounts (zoo.cfg corral.mount.*)\n")
		for _, m := range r.Mounts {
			p("  %s\tshard %d\n", m.Path, m.ShardID)
		}
	}
	if len(routes) > 0 {
		p("\nmoved subtrees (routes recorded by the shards)\n%s", strings.Join(routes, ""))
	}
	if len(added) > 0 {
		p("\ndata shards added online (root shard)\n%s", strings.Join(added, ""))
	}
	closing, eph := 0, 0
	for _, s := range r.Sessions {
		if s.Closing {
			closing++
		}
		eph += s.Ephemerals
	}
	src := "the meta shard's session table"
	if !r.SessionsFromMeta {
		src = "the data shards only (ephemeral owners and ownership epochs; sessions that never wrote are missing)"
	}
	p("\nsessions: %d (%d closing), %d ephemerals; from %s\n", len(r.Sessions), closing, eph, src)
	if sessions && len(r.Sessions) > 0 {
		p("  session\ttimeout\towner\tephemerals\tstate\n")
		for _, s := range r.Sessions {
			timeout, owner := "?", "?"
			if s.Timeout > 0 {
				timeout = strconv.Itoa(int(s.Timeout)) + "ms"
			}
			if s.Owner != 0 {
				owner = "server " + strconv.FormatUint(s.Owner, 10)
			}
			state := "open"
			if s.Closing {
				state = "closing"
			}
			p("  0x%016x\t%s\t%s\t%d\t%s\n", uint64(s.ID), timeout, owner, s.Ephemerals, state)
		}
	}
	return tw.Flush()
}

func idList(ids []uint64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(s, ",")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
