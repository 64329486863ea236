package zkdata

import (
	"encoding/binary"
	"hash/crc32"
	"strings"
)

// ZooKeeper 3.6+ keeps a digest of its tree (NodeHashMapImpl, DigestCalculator): the sum of a
// CRC-32 per znode outside /zookeeper/. It stores the digest after each snapshot (with the zxid
// it belongs to) and after each logged transaction. The tree keeps the same sum through the
// replay, and digestCheck compares the two.

// digestVersion is the only digest version this package computes (DigestCalculator).
const digestVersion = 2

// nodeDigest is z's part of ZooKeeper's tree digest (DigestCalculator, version 2): the CRC-32
// of the path ("" for the root), the data and 60 bytes of persisted stat.
func (t *Tree) nodeDigest(z *znode) int64 {
	b := t.scratch[:0]
	if z.path != "/" {
		b = append(b, z.path...)
	}
	crc := crc32.ChecksumIEEE(b)
	crc = crc32.Update(crc, crc32.IEEETable, z.data)
	b = binary.BigEndian.AppendUint64(b[:0], uint64(z.czxid))
	b = binary.BigEndian.AppendUint64(b, uint64(z.mzxid))
	b = binary.BigEndian.AppendUint64(b, uint64(z.pzxid))
	b = binary.BigEndian.AppendUint64(b, uint64(z.ctime))
	b = binary.BigEndian.AppendUint64(b, uint64(z.mtime))
	b = binary.BigEndian.AppendUint32(b, uint32(z.version))
	b = binary.BigEndian.AppendUint32(b, uint32(z.cversion))
	b = binary.BigEndian.AppendUint32(b, uint32(z.aversion))
	b = binary.BigEndian.AppendUint64(b, uint64(z.owner))
	t.scratch = b
	return int64(crc32.Update(crc, crc32.IEEETable, b))
}

func (t *Tree) addDigest(z *znode) {
	if !strings.HasPrefix(z.path, "/zookeeper/") {
		t.digest += t.nodeDigest(z)
	}
}

func (t *Tree) unDigest(z *znode) {
	if !strings.HasPrefix(z.path, "/zookeeper/") {
		t.digest -= t.nodeDigest(z)
	}
}

// digestCheck compares the tree's digest with those ZooKeeper stored, as
// FileTxnSnapLog.fastForwardFromEdits and DataTree.compareSnapshotDigests do. A snapshot is
// fuzzy up to the zxid of its digest: until the replay reaches it, logged digests are not
// compared. ZooKeeper stores that digest while it may be applying the next transaction, part of
// which the snapshot may hold, so a mismatch at the digest's own zxid is provisional: the next
// match clears it. Without a snapshot digest (older snapshots) the fuzzy range is unknown and
// every mismatch before the first match is provisional. Provisional mismatches that no match
// ever clears are reported at the end.
type digestCheck struct {
	t        *Tree
	snap     *snapDigest // the snapshot's digest until the replay reaches its zxid
	fuzzyEnd int64       // the zxid up to which a mismatch is provisional, -1 for the first match
	settled  bool        // a digest matched
	pending  []int64     // provisional mismatches
}

func newDigestCheck(t *Tree, dg *snapDigest) *digestCheck {
	d := &digestCheck{t: t, fuzzyEnd: -1}
	// DataTree.deserializeZxidDigest ignores a digest older than the snapshot.
	if dg != nil && dg.zxid >= t.zxid && dg.version == digestVersion {
		d.snap, d.fuzzyEnd = dg, dg.zxid
	}
	d.reached()
	return d
}

// reached compares the snapshot's digest once the tree is at its zxid.
func (d *digestCheck) reached() {
	if d.snap != nil && d.t.zxid == d.snap.zxid {
		d.compare(d.snap.zxid, d.snap.value)
		d.snap = nil
	}
}

// applied is called after each replayed transaction.
func (d *digestCheck) applied(e *entry) {
	d.reached()
	if d.snap == nil && e.hasDigest && e.digest.version == digestVersion {
		d.compare(e.hdr.zxid, e.digest.tree)
	}
}

func (d *digestCheck) compare(zxid, want int64) {
	rep := &d.t.report
	rep.DigestsChecked++
	switch {
	case d.t.digest == want:
		d.settled, d.pending = true, nil
	case !d.settled && (d.fuzzyEnd < 0 || zxid <= d.fuzzyEnd):
		d.pending = append(d.pending, zxid)
	default:
		d.mismatch(zxid)
	}
}

func (d *digestCheck) mismatch(zxid int64) {
	if rep := &d.t.report; len(rep.DigestMismatches) < 16 {
		rep.DigestMismatches = append(rep.DigestMismatches, zxid)
	}
}

// done reports what is left at the end of the replay.
func (d *digestCheck) done() {
	if !d.settled {
		for _, z := range d.pending {
			d.mismatch(z)
		}
	}
	if d.snap != nil {
		d.t.warnf("the snapshot's digest is for zxid %#x but the logs end at %#x: the snapshot may hold changes the logs do not explain", d.snap.zxid, d.t.zxid)
	}
}
