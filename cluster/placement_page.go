package cluster

import (
	"fmt"
	"io"
	"net/http"
	"strings"
)

// servePlacement writes the admin /placement page: per data shard this server's view of it
// (znodes, last applied zxid, a transaction it holds prepared), then every top-level znode with
// the shard that serves its subtree. Plain text, one record per line, for operators and scripts.
func (s *Node) servePlacement(w http.ResponseWriter, _ *http.Request) {
	io.WriteString(w, s.PlacementText())
}

// PlacementText is the content of the admin /placement page.
func (s *Node) PlacementText() string {
	var w strings.Builder
	r := s.router
	fmt.Fprintf(&w, "placement=%s root_shard=%d\n", r.Placement(), r.Root().ID)
	for _, sh := range r.Shards() {
		v := sh.View()
		if v == nil {
			fmt.Fprintf(&w, "shard=%d open=false\n", sh.ID)
			continue
		}
		line := fmt.Sprintf("shard=%d tag=%d znodes=%d zxid=0x%x", sh.ID, sh.Tag(), v.Len(), v.Zxid())
		if p, ok := v.Prepared(); ok {
			line += fmt.Sprintf(" prepared_txn=%x anchor=%d deadline_ms=%d", p.ID, p.Anchor, p.Deadline)
		}
		fmt.Fprintln(&w, line)
	}
	for _, m := range r.Mounts() {
		if m.Path != "/" {
			fmt.Fprintf(&w, "mount=%s shard=%d\n", m.Path, m.ShardID)
		}
	}
	root := r.Root().View()
	if root == nil {
		return w.String()
	}
	for _, name := range root.Children("/") {
		path := "/" + name
		fmt.Fprintf(&w, "subtree=%s shard=%d\n", path, r.Lookup(path).ID)
	}
	return w.String()
}
