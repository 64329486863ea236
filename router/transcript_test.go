package router

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral/corral/internal/transcript"
	"github.com/corral/corral/shard"
)

// TestTranscripts runs the read-order transcripts in testdata/*.txt (internal/transcript's
// format) against readFixture: a router over shards 2 ("/", zxid tag 1) and 3 ("/b", tag 2)
// whose local replicas lag behind what their shards committed until a catch-up round. With
// -rewrite the files are regenerated from the actual output.
//
// Commands (times are the batch times in ms a zxid's counter comes from; a zxid prints as
// <ms>ms+<logical>@t<tag>):
//
//	reset                                   a fresh fixture: /x on shard 2, /b on shard 3, both at 1000
//	write SHARD PATH at=MS [lag]            create PATH on SHARD; lag: committed, not applied here yet
//	mounts PATH=SHARD...                    replace the mount table
//	fail on|off                             catch-up rounds fail (a replica cut off from its quorum)
//	read PATH [seen=MS] [watching] [maxage=MS] [stale] [register] [moveto=SHARD]
//	                                        a read bound by those (seen: a zxid of shard 2 at MS;
//	                                        moveto: the path's subtree moves to SHARD while the first
//	                                        attempt reads); prints where each attempt read and what
//	                                        it found, the rounds each shard ran, or the error
//	views                                   each shard's view zxid and whether it holds /b/y
func TestTranscripts(t *testing.T) {
	transcript.RunDir(t, func(t *testing.T) func([]string) []string { return (&readHarness{t: t}).run })
}

type readHarness struct {
	t *testing.T
	f *readFixture
}

func fmtZxid(z int64) string {
	c := shard.ZxidCounter(z)
	return fmt.Sprintf("%dms+%d@t%d", c>>12, c&(1<<12-1), shard.ZxidTag(z))
}

func (h *readHarness) run(input []string) []string {
	var out []string
	for _, line := range input {
		out = append(out, h.exec(line)...)
	}
	return out
}

func (h *readHarness) exec(line string) []string {
	fields := strings.Fields(line)
	cmd, args := fields[0], fields[1:]
	opts := map[string]string{}
	var pos []string
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok {
			opts[k] = v
		} else {
			pos = append(pos, a)
		}
	}
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			h.t.Fatalf("%q: %v", line, err)
		}
		return n
	}
	has := func(name string) bool {
		for _, p := range pos {
			if p == name {
				return true
			}
		}
		return false
	}
	if h.f == nil && cmd != "reset" {
		h.f = newReadFixture(h.t)
	}
	switch cmd {
	case "reset":
		h.f = newReadFixture(h.t)
		return h.views()
	case "write":
		id := uint64(num(pos[0]))
		h.f.write(h.t, id, num(opts["at"]), pos[1], !has("lag"))
		if has("lag") {
			return []string{fmt.Sprintf("shard %d committed %s, not applied here", id, pos[1])}
		}
		return []string{fmt.Sprintf("shard %d applied %s at %s", id, pos[1], fmtZxid(h.f.r.Shard(id).View().Zxid()))}
	case "mounts":
		var ms []Mount
		for _, a := range args {
			p, s, _ := strings.Cut(a, "=")
			ms = append(ms, Mount{Path: p, ShardID: uint64(num(s))})
		}
		h.f.r.SetMounts(ms)
		return []string{"ok"}
	case "fail":
		h.f.mu.Lock()
		h.f.fail = nil
		if pos[0] == "on" {
			h.f.fail = errors.New("no quorum")
		}
		h.f.mu.Unlock()
		return []string{"ok"}
	case "views":
		return h.views()
	case "read":
		return h.read(pos[0], opts, has, num)
	}
	h.t.Fatalf("unknown command %q", line)
	return nil
}

func (h *readHarness) views() []string {
	var out []string
	for _, id := range []uint64{2, 3} {
		v := h.f.r.Shard(id).View()
		_, y := v.Get("/b/y")
		out = append(out, fmt.Sprintf("shard %d view %s, /b/y %v", id, fmtZxid(v.Zxid()), map[bool]string{true: "present", false: "absent"}[y]))
	}
	return out
}

func (h *readHarness) read(path string, opts map[string]string, has func(string) bool, num func(string) int64) []string {
	b := ReadBound{Timeout: 10 * time.Second, Watching: has("watching"), Stale: has("stale"), Now: time.Now()}
	if s, ok := opts["seen"]; ok {
		b.Seen = zxidAt(num(s))
	}
	if s, ok := opts["maxage"]; ok {
		b.MaxAge = time.Duration(num(s)) * time.Millisecond
	}
	before := map[uint64]int{2: h.f.roundsOf(2), 3: h.f.roundsOf(3)}
	var out []string
	attempt := 0
	read := func(sh *Shard, v *shard.View) {
		attempt++
		_, found := v.Get(path)
		out = append(out, fmt.Sprintf("attempt %d: shard %d view %s: %s %s", attempt, sh.ID, fmtZxid(v.Zxid()), path,
			map[bool]string{true: "found", false: "absent"}[found]))
		if to, ok := opts["moveto"]; ok && attempt == 1 {
			ms := []Mount{{Path: "/", ShardID: 2}}
			if id := uint64(num(to)); id != 2 {
				ms = append(ms, Mount{Path: "/b", ShardID: id})
			}
			h.f.r.SetMounts(ms)
		}
	}
	var sh *Shard
	var err error
	if has("register") {
		var unlock func()
		sh, _, unlock, err = h.f.r.ReadRegistered(path, b, read)
		if err == nil {
			unlock()
		}
	} else {
		sh, _, err = h.f.r.Read(path, b, read)
	}
	if err != nil {
		out = append(out, "error: "+err.Error())
	} else {
		out = append(out, fmt.Sprintf("answered from shard %d", sh.ID))
	}
	var rounds []string
	for _, id := range []uint64{2, 3} {
		if n := h.f.roundsOf(id) - before[id]; n > 0 {
			rounds = append(rounds, fmt.Sprintf("shard %d: %d", id, n))
		}
	}
	sort.Strings(rounds)
	if len(rounds) == 0 {
		rounds = []string{"none"}
	}
	return append(out, "rounds: "+strings.Join(rounds, ", "))
}
