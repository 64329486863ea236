package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/corral/corral/format"
	"github.com/corral/corral/router"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// StatLine is one line of POST /import/stats: a znode's path and the stat fields an import or
// restore sets verbatim (shard.SetStat). Cversion is the stored count of child creations
// (ZooKeeper's StatPersisted.cversion, which names the next sequential child), not the cversion
// clients see.
type StatLine struct {
	Path     string `json:"path"`
	Czxid    int64  `json:"czxid"`
	Mzxid    int64  `json:"mzxid"`
	Pzxid    int64  `json:"pzxid"`
	Ctime    int64  `json:"ctime"`
	Mtime    int64  `json:"mtime"`
	Version  int32  `json:"version"`
	Aversion int32  `json:"aversion"`
	Cversion int32  `json:"cversion"`
}

// StatResult is the answer of POST /import/stats.
type StatResult struct {
	Applied int          `json:"applied"`
	Failed  []StatFailed `json:"failed,omitempty"`
}

// StatFailed names a line that was not applied and why (a ZooKeeper error name).
type StatFailed struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// maxStatLines bounds one request; an importer sends larger trees in several.
const maxStatLines = 100_000

// serveImportStats handles POST /import/stats: a body of JSON lines (StatLine), each applied
// to its znode's shard as an OpSetStat, in parallel through the shards' proposers. It answers
// 200 with a StatResult (lines that failed are listed, with ZooKeeper's error name: NONODE for
// a znode that does not exist), 400 for a malformed body, 409 while the ensemble's format level
// is below 3 (a server of an older version could not apply the op), or below 5 for a line of
// "/" (shard.SetStat.Root). Once the lines are applied, every data shard's clock is moved past
// the largest zxid they set (raiseClocks).
func (s *Node) serveImportStats(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST /import/stats with one JSON object per line: {\"path\":..., \"czxid\":..., ...}", http.StatusMethodNotAllowed)
		return
	}
	if !s.atLevel(w, format.Level3, "setting stats") {
		return
	}
	var lines []StatLine
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l StatLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			http.Error(w, fmt.Sprintf("line %d: %v", n, err), http.StatusBadRequest)
			return
		}
		if len(lines) == maxStatLines {
			http.Error(w, fmt.Sprintf("more than %d lines: send them in several requests", maxStatLines), http.StatusBadRequest)
			return
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	root := slices.ContainsFunc(lines, func(l StatLine) bool { return l.Path == "/" })
	if root && !s.atLevel(w, format.LevelCut, "setting the stat of /") {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	res := s.setStats(ctx, lines)
	if err := s.raiseClocks(ctx, lines); err != nil {
		res.Failed = append(res.Failed, StatFailed{Error: "moving the shards' clocks past the stats: " + err.Error()})
	}
	if len(res.Failed) > 0 {
		s.log.Warn("import: some stats were not set", "applied", res.Applied, "failed", len(res.Failed),
			"first", res.Failed[0].Path, "error", res.Failed[0].Error)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(res)
}

// setStats proposes an OpSetStat per line on the shard that serves its path and waits for all.
// A line its shard sends back because its subtree moved meanwhile is routed again.
func (s *Node) setStats(ctx context.Context, lines []StatLine) StatResult {
	var mu sync.Mutex
	var res StatResult
	var wg sync.WaitGroup
	var submit func(l *StatLine, tries int)
	submit = func(l *StatLine, tries int) {
		st := shard.SetStat{Path: l.Path, Czxid: l.Czxid, Mzxid: l.Mzxid, Pzxid: l.Pzxid, Ctime: l.Ctime,
			Mtime: l.Mtime, Version: l.Version, Aversion: l.Aversion, Cversion: l.Cversion,
			Root: l.Path == "/" && s.table.Level() >= format.LevelCut}
		sh := s.router.Lookup(l.Path)
		sh.Proposer.Submit(&router.Request{Op: shard.Op{Code: shard.OpSetStat, Body: shard.SetStatBody(&st), MinZxid: st.MaxZxid()},
			Done: func(r shard.OpResult, err error) {
				if err == nil && r.Err == shard.ErrMoved && tries < 3 {
					go submit(l, tries+1) // Done must not block
					return
				}
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					res.Failed = append(res.Failed, StatFailed{Path: l.Path, Error: err.Error()})
				case r.Err != wire.ErrOK:
					res.Failed = append(res.Failed, StatFailed{Path: l.Path, Error: r.Err.String()})
				default:
					res.Applied++
				}
				wg.Done()
			}})
	}
	wg.Add(len(lines))
	for i := range lines {
		submit(&lines[i], 0)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		res.Failed = append(res.Failed, StatFailed{Error: "timed out waiting for the shards: " + ctx.Err().Error()})
		mu.Unlock()
	}
	mu.Lock()
	defer mu.Unlock()
	return StatResult{Applied: res.Applied, Failed: append([]StatFailed(nil), res.Failed...)}
}

// atLevel reports whether the ensemble's format level is at least lvl; if not, it answers 409
// saying that what needs it.
func (s *Node) atLevel(w http.ResponseWriter, lvl format.Level, what string) bool {
	if active := s.table.Level(); active < lvl {
		http.Error(w, fmt.Sprintf("the ensemble runs format %s; %s needs %s: upgrade every server first (docs/operations.md \"Upgrading\")",
			active, what, lvl), http.StatusConflict)
		return false
	}
	return true
}
