package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/corral/corral/router"
)

// serveMove is the admin endpoint POST /move?path=/kafka&shard=4: it moves the subtree at path
// (which need not exist yet: then it mounts the path on the shard) to the data shard, online,
// with this server as the move's coordinator (router.Move). shard=new first adds a data shard
// (AddShard; the optional expect=N guards against adding two when a request is retried) and
// moves the subtree onto it. 200 with a line describing the move; 400 for a request without a
// path or shard; 409 when the move (or the add) is refused (nothing changed); 500 when its
// outcome is unknown (recovery completes or aborts a move left prepared; ask again: a
// completed move is then refused as "already there").
func (s *Node) serveMove(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST /move?path=/x&shard=N", http.StatusMethodNotAllowed)
		return
	}
	path := r.URL.Query().Get("path")
	arg := r.URL.Query().Get("shard")
	to, err := strconv.ParseUint(arg, 10, 64)
	if path == "" || err != nil && arg != "new" {
		http.Error(w, "POST /move?path=/x&shard=N: path and a data shard id (or new) are required", http.StatusBadRequest)
		return
	}
	added := "" // the line saying which shard was added (shard=new)
	if arg == "new" {
		if why := router.ValidMount(path); why != "" {
			http.Error(w, fmt.Sprintf("%s: %s", path, why), http.StatusConflict)
			return
		}
		actx, cancel, expect, ok := addShardParams(w, r)
		if !ok {
			return
		}
		s.log.Info("adding a data shard to move a subtree onto", "path", path, "expect", expect)
		rec, err := s.AddShard(actx, expect)
		cancel()
		if err != nil {
			addShardFailed(w, s, err)
			return
		}
		s.log.Info("added a data shard", "shard", rec.ID, "tag", rec.Tag, "voters", idList(rec.Voters))
		added = "added " + describeAdded(rec) + "\n"
		to = rec.ID
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*router.MoveDeadline)
	defer cancel()
	start := time.Now()
	res, err := s.router.Move(ctx, path, to)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, router.ErrMoveRefused) {
			code = http.StatusConflict
		}
		s.log.Warn("subtree move failed", "path", path, "to", to, "err", err)
		http.Error(w, added+err.Error(), code)
		return
	}
	io.WriteString(w, added)
	took := time.Since(start)
	s.log.Info("moved subtree", "path", res.Path, "from", res.From, "to", res.To, "zxid", fmt.Sprintf("0x%x", res.Zxid),
		"bytes", res.Bytes, "took", took)
	fmt.Fprintf(w, "moved %s from shard %d to shard %d at zxid 0x%x (%d bytes copied) in %s\n",
		res.Path, res.From, res.To, res.Zxid, res.Bytes, took.Round(time.Millisecond))
}

// ReroutedWrites returns how many client writes this server proposed again because a subtree
// move sent them back (see server.Server.ReroutedWrites).
func (s *Node) ReroutedWrites() int64 {
	if srv := s.srvPtr.Load(); srv != nil {
		return srv.ReroutedWrites()
	}
	return 0
}
