package cluster

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/corral/corral/format"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/tools/backupfile"
	"github.com/corral/corral/wire"
)

// cutTimeout bounds how long GET /backup tries to take its cut (other transactions can make an
// attempt busy; each one is short).
const cutTimeout = 30 * time.Second

// CutStallHeader is the response header of GET /backup that says how long the cut stalled the
// shards' writes (router.CutStats.Held, a Go duration).
const CutStallHeader = "X-Corral-Cut-Stall"

// serveBackup handles GET /backup: one consistent cut of every data shard (router.TakeCut,
// docs/design.md "Backup: one consistent cut"), streamed as a backup file (tools/backupfile)
// from the immutable views of the cut. 409 below format level 6 (LevelCut); 503 when no cut got through.
// The adminauth guard asks for an operator (the file holds every znode, whatever its ACL).
// A failure after the first byte leaves the file without its trailer, which a reader refuses.
// Each request is counted and its cut timed (backup_metrics.go).
func (s *Node) serveBackup(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET /backup", http.StatusMethodNotAllowed)
		return
	}
	if !s.atLevel(w, format.LevelCut, "a backup's cut") {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), cutTimeout)
	views, st, err := s.router.TakeCut(ctx)
	cancel()
	s.metrics.cut(st, err)
	if err != nil {
		s.log.Warn("backup: no consistent cut", "attempts", st.Attempts, "err", err)
		http.Error(w, "taking a consistent cut of the data shards: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	h := backupfile.Header{Created: time.Now().UnixMilli(), Server: s.cfg.MyID, Format: uint32(s.table.Level())}
	for _, v := range views {
		h.Shards = append(h.Shards, backupfile.ShardInfo{ID: v.ShardID(), Zxid: v.Zxid()})
	}
	s.log.Info("backup: cut taken", "attempts", st.Attempts, "writes_stalled", st.Held, "shards", len(views))
	w.Header().Set(CutStallHeader, st.Held.String())
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="corral-%d.backup"`, h.Created))
	bw, err := backupfile.NewWriter(w, h)
	if err == nil {
		err = WriteViews(bw, views, s.router.Root().ID)
	}
	if err == nil {
		var t backupfile.Trailer
		t, err = bw.Close()
		s.log.Info("backup: sent", "znodes", t.Nodes, "remote", r.RemoteAddr)
	}
	s.metrics.sent(err)
	if err != nil {
		s.log.Warn("backup: stopped while sending; the client's file has no trailer and will be refused", "remote", r.RemoteAddr, "err", err)
	}
}

// WriteViews writes the znodes of views (one per data shard, of one cut) to bw in key order, a
// merge of the shards' walks, so every parent comes before its children whatever shard holds
// it. Left out: ephemerals (their sessions do not outlive the ensemble), /zookeeper and
// /zookeeper/config (every ensemble has its own), and the root "/" and /zookeeper/quota of
// every shard but root (the shard that serves them). Kept: the quota nodes below
// /zookeeper/quota (docs/design.md §17: on the shard of what they count), so a restore brings
// the quotas back.
func WriteViews(bw *backupfile.Writer, views []*shard.View, root uint64) error {
	type head struct {
		key  string
		node shard.NodeInfo
		next func() (string, shard.NodeInfo, bool)
	}
	var heads []*head
	for _, v := range views {
		next, stop := iter.Pull2(walk(v, v.ShardID() == root))
		defer stop()
		if p, n, ok := next(); ok {
			heads = append(heads, &head{key: treeKey(p), node: n, next: next})
		}
	}
	for len(heads) > 0 {
		first := 0
		for i := range heads {
			if heads[i].key < heads[first].key {
				first = i
			}
		}
		h := heads[first]
		if err := bw.Node(backupNode(h.node)); err != nil {
			return err
		}
		if p, n, ok := h.next(); ok {
			h.key, h.node = treeKey(p), n
		} else {
			heads = append(heads[:first], heads[first+1:]...)
		}
	}
	return nil
}

// walk yields the znodes of v a backup keeps, in key order.
func walk(v *shard.View, withRoot bool) iter.Seq2[string, shard.NodeInfo] {
	return func(yield func(string, shard.NodeInfo) bool) {
		v.WalkAll(func(p string, n shard.NodeInfo) bool {
			switch {
			case (p == "/" || p == shard.QuotaRoot) && !withRoot, n.IsEphemeral():
				return true
			case p == "/zookeeper", strings.HasPrefix(p, "/zookeeper/") && !inQuota(p):
				return true
			}
			return yield(p, n)
		})
	}
}

// inQuota reports whether p is /zookeeper/quota or below it.
func inQuota(p string) bool {
	return p == shard.QuotaRoot || strings.HasPrefix(p, shard.QuotaRoot+"/")
}

// treeKey orders paths as the shards' trees do: "/" first, then by components.
func treeKey(p string) string {
	if p == "/" {
		return ""
	}
	return strings.ReplaceAll(p, "/", "\x01")
}

func backupNode(n shard.NodeInfo) *backupfile.Node {
	st := n.Stat()
	b := &backupfile.Node{Path: n.Path(), Data: n.Data(), Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid,
		Ctime: st.Ctime, Mtime: st.Mtime, Version: st.Version, Cversion: n.StoredCversion(), Aversion: st.Aversion,
		ACL: n.ACL()}
	switch n.Kind() {
	case "container":
		b.Type = backupfile.Container
	case "ttl":
		b.Type, b.TTL = backupfile.TTL, n.TTL()
	}
	return b
}

// raiseClocks moves every data shard's zxid clock past the largest zxid lines set (an OpSetStat
// of no znode, shard.ClockBody), so that no later write on any shard gets a zxid below a
// restored or imported one (docs/design.md §1).
func (s *Node) raiseClocks(ctx context.Context, lines []StatLine) error {
	var top int64
	for i := range lines {
		top = max(top, lines[i].Czxid, lines[i].Mzxid, lines[i].Pzxid)
	}
	if top <= 0 {
		return nil
	}
	err := s.router.OnEveryShard(ctx, shard.Op{Code: shard.OpSetStat, Body: shard.ClockBody(), MinZxid: top})
	if err == wire.ErrBadArguments {
		err = nil // the expected answer: the op names no znode
	}
	return err
}
