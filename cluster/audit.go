package cluster

import (
	"github.com/corral/corral/audit"
	"github.com/corral/corral/shard"
)

// shardListener is every data shard replica's replica.Listener: the router (views and watch
// events), then the audit log's ephemeralZNodeDeletionOnSessionCloseOrExpire lines.
//
// ZooKeeper writes those lines in DataTree.deleteNodes, so every server writes one per
// ephemeral znode of a closed or expired session, whichever server the session was connected
// to. Here too: every server holds a replica of every data shard, and each replica's apply
// reports the ephemerals its close removed (shard.Event.Session), so each server's audit log
// has one line per znode. Apply itself does no IO; the lines are queued (audit.Log.Write never
// blocks) from the listener, on the apply goroutine, in apply order. Entries a replica applies
// before the client port opens (a restart's replay, the catch-up before serving) have no line:
// the log is not open yet.
type shardListener struct{ s *Node }

// Applied implements replica.Listener.
func (l shardListener) Applied(shardID uint64, v *shard.View, events []shard.Event) {
	l.s.router.Applied(shardID, v, events)
	log := l.s.auditApply.Load()
	if log == nil {
		return
	}
	var lines []audit.Event
	for _, e := range events {
		if e.Session != 0 {
			lines = append(lines, audit.EphemeralDeleted(log.User(), e.Session, e.Path))
		}
	}
	log.Write(lines...)
}
