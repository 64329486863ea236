package router

import (
	"strings"

	"github.com/corral/corral/shard"
)

// Quotas across shards (docs/design.md "Quotas"). ZooKeeper keeps a quota's limits and usage
// in /zookeeper/quota/<path>/zookeeper_limits and .../zookeeper_stats, and updates the usage in
// the same transaction as the write it counts. Here /zookeeper/quota/<path>/... lives on the
// shard that serves <path> (QuotaTarget), so the write, the limits it is checked against and
// the stats it changes are in one shard's state and one apply. /zookeeper/quota itself stays on
// the root shard, which holds a stub for each of its children that lives elsewhere (the mount
// point mechanism of design.md §6), so getChildren("/zookeeper/quota") lists what ZooKeeper
// lists.

// QuotaTarget returns the path whose shard serves the quota node path: for
// /zookeeper/quota/<p>/... it is /<p>/... (the same components below "/"), except for
// /zookeeper/quota/zookeeper_limits and /zookeeper/quota/zookeeper_stats (a quota on "/",
// which ZooKeeper never counts) and everything outside /zookeeper/quota/, which map to
// themselves; ok reports a mapping.
func QuotaTarget(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, shard.QuotaRoot)
	if !ok || len(rest) < 2 || rest[0] != '/' {
		return path, false
	}
	if name := rest[1:]; name == shard.QuotaLimitNode || name == shard.QuotaStatNode {
		return path, false
	}
	return rest, true
}

// SetQuotaMode installs the function that says how this server's writes treat quotas (its
// format level and zookeeper.enforceQuota). Below format.LevelQuota it returns QuotaOff: then
// writes count nothing and /zookeeper/quota stays whole on the root shard, as before quotas.
func (r *Router) SetQuotaMode(f func() shard.QuotaMode) { r.quotaMode.Store(&f) }

// QuotaMode is what the function SetQuotaMode installed says now (QuotaOff without one).
func (r *Router) QuotaMode() shard.QuotaMode {
	if f := r.quotaMode.Load(); f != nil {
		return (*f)()
	}
	return shard.QuotaOff
}

// quotaRoute returns the path Route looks up for path: its QuotaTarget when quotas are on,
// unless the root shard holds /zookeeper/quota/<top> as a node of its own (not a stub) for a
// <top> that lives elsewhere: a node written before the ensemble reached format.LevelQuota,
// which stays where it is, readable and deletable (delquota), and counts nothing.
func (r *Router) quotaRoute(path string) string {
	if len(path) <= len(shard.QuotaRoot) || path[1] != 'z' {
		return path // the common case, without a call
	}
	t, ok := QuotaTarget(path)
	if !ok || r.QuotaMode() == shard.QuotaOff {
		return path
	}
	top, _, _ := strings.Cut(t[1:], "/")
	if v := r.Root().View(); v != nil {
		if _, legacy := v.Get(shard.QuotaRoot + "/" + top); legacy {
			return path
		}
	}
	return t
}

// quotaBlocksMove says why the subtree at path cannot move from src ("" when it can): a move
// does not carry /zookeeper/quota/<path>/... along, nor the usage of a quota above path.
func quotaBlocksMove(path string, src *Shard) string {
	v := src.View()
	if v == nil {
		return ""
	}
	if _, ok := v.Get(shard.QuotaRoot + path); ok {
		return "quota nodes live at " + shard.QuotaRoot + path + " (delete the quotas with delquota, move, then set them again)"
	}
	for p := path; ; {
		i := strings.LastIndexByte(p, '/')
		if i <= 0 {
			return ""
		}
		p = p[:i]
		if _, ok := v.Get(shard.QuotaRoot + p + "/" + shard.QuotaLimitNode); ok {
			return "it lies in the quota'd subtree " + p + " (delete that quota with delquota, move, then set it again)"
		}
	}
}
