package shard

// Cuts: the participant side of a backup's consistent cut (docs/design.md, "Backup: one
// consistent cut"; format.LevelCut).
//
// A cut is a cross-shard transaction (TxnPrepare with Cut set) with no ops, prepared on every
// data shard by the server that takes a backup. While a shard holds it prepared the shard
// applies no batch at all (blockedByPrepared: every batch is BatchBlocked and proposed again
// after the cut is gone) and no other transaction prepares (a shard holds one prepared
// transaction at a time), so its tree is the state at the cut's prepare for as long as the cut
// is held. The coordinator reads its local view of each shard in that window, then aborts the
// cut everywhere: a cut never commits (txnCommit refuses one), so it changes no znode and
// consumes no zxid. A cut whose coordinator died is aborted by the recovery of any prepared
// transaction (cluster.recoverTxnsOnce: past its deadline it is resolved at its anchor, which,
// undecided, aborts).

// prepareCut holds the cut p prepared (a repeat of the prepare answers as the first one did).
// floor is the counter reserved as for any prepare; nothing is evaluated.
func (s *State) prepareCut(p *preparedTxn, floor int64, repeat bool) TxnReply {
	if !repeat {
		p.floor = floor
		p.setLocks()
		s.setPrepared(p)
	}
	return TxnReply{Outcome: TxnPrepared, Floor: floor}
}

// PreparedCut reports whether the transaction the view's shard holds prepared is the cut id.
func (v *View) PreparedCut(id uint64) bool {
	return v.prepared != nil && v.prepared.ID == id && v.prepared.Cut
}

// WalkAll calls fn for every znode of the view (stubs skipped) in key order, so a parent before
// its children, until fn returns false. Unlike Walk it needs no root: a data shard that does not
// serve "/" holds top-level znodes without it.
func (v *View) WalkAll(fn func(path string, n NodeInfo) bool) {
	v.tree.nodes.Ascend(func(n *node) bool { return n.isStub() || fn(pathOf(n.key), NodeInfo{n}) })
}
