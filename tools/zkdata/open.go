package zkdata

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Report says which files a Tree was read from and what was noticed on the way.
type Report struct {
	// SnapDir and LogDir are the version-2 directories read.
	SnapDir, LogDir string
	// Snapshot is the snapshot loaded; Skipped the newer ones that were not usable, newest first.
	Snapshot SnapshotFile
	Skipped  []SkippedSnapshot
	// Logs are the transaction logs read, oldest first, and Txns the transactions applied
	// from them (those after the snapshot).
	Logs []LogFile
	Txns int
	// DigestsChecked counts the points where the tree's digest was compared with one
	// ZooKeeper stored (at the snapshot's digest zxid, and after each logged transaction from
	// then on); DigestMismatches lists the zxids where they differed (at most 16): there the
	// tree differs from the one ZooKeeper had.
	DigestsChecked   int
	DigestMismatches []int64
	// Warnings are the things ZooKeeper would log as warnings and go on.
	Warnings []string
}

// Open reads the ZooKeeper data in dataDir (snapshots) and dataLogDir (transaction logs; ""
// means the same as dataDir) and returns the tree at the last transaction. Either directory may
// be given as ZooKeeper's dataDir, which holds version-2/, or as the version-2 directory itself.
// The files are only read.
func Open(dataDir, dataLogDir string) (*Tree, error) {
	if dataLogDir == "" {
		dataLogDir = dataDir
	}
	snapDir, err := resolveDir(dataDir)
	if err != nil {
		return nil, err
	}
	logDir, err := resolveDir(dataLogDir)
	if err != nil {
		return nil, err
	}
	snaps, logsInSnapDir, err := listDir(snapDir)
	if err != nil {
		return nil, err
	}
	logs := logsInSnapDir
	if logDir != snapDir {
		var snapsInLogDir []dataFile
		if snapsInLogDir, logs, err = listDir(logDir); err != nil {
			return nil, err
		}
		if err := checkSeparateDirs(snapDir, logDir, len(snapsInLogDir) > 0, len(logsInSnapDir) > 0); err != nil {
			return nil, err
		}
	}

	t, dg, skipped, err := loadNewestSnapshot(snaps)
	if err != nil {
		if len(snaps) == 0 && len(logs) == 0 {
			return nil, fmt.Errorf("zkdata: %s holds no ZooKeeper snapshot or transaction log", snapDir)
		}
		return nil, err
	}
	t.report.SnapDir, t.report.LogDir, t.report.Skipped = snapDir, logDir, skipped
	if err := t.replay(logsFrom(logs, t.zxid+1), dg); err != nil {
		return nil, err
	}
	if n := t.killDeadSessions(); n > 0 {
		t.warnf("deleted the ephemerals of %d sessions that are not alive, as ZooKeeper does when it starts", n)
	}
	if err := t.checkACLs(); err != nil {
		return nil, err
	}
	return t, nil
}

// loadNewestSnapshot loads the newest snapshot that reads without error, as FileSnap.deserialize
// does: it tries at most 100 of those that look valid (SnapStream.isValidSnapshot), newest first.
func loadNewestSnapshot(snaps []dataFile) (*Tree, *snapDigest, []SkippedSnapshot, error) {
	var skipped []SkippedSnapshot
	tries := 0
	for _, f := range snaps {
		if tries == maxSnapshotTries {
			break
		}
		if err := looksValid(f); err != nil {
			skipped = append(skipped, SkippedSnapshot{Path: f.path, Err: err})
			continue
		}
		tries++
		t, dg, err := loadSnapshot(f)
		if err != nil {
			skipped = append(skipped, SkippedSnapshot{Path: f.path, Err: err})
			continue
		}
		t.report.Snapshot.Compression = f.comp.String()
		return t, dg, skipped, nil
	}
	if len(skipped) == 0 {
		return nil, nil, nil, errors.New("zkdata: no snapshot (ZooKeeper refuses transaction logs without one)")
	}
	msgs := make([]string, len(skipped))
	for i, s := range skipped {
		msgs[i] = s.Path + ": " + strings.TrimPrefix(s.Err.Error(), "zkdata: ")
	}
	return nil, nil, skipped, fmt.Errorf("zkdata: no usable snapshot: %s", strings.Join(msgs, "; "))
}

func (t *Tree) warnf(format string, args ...any) {
	t.report.Warnings = append(t.report.Warnings, fmt.Sprintf(format, args...))
}

// replay applies the transactions after the snapshot from logs (oldest first), as
// FileTxnSnapLog.fastForwardFromEdits does, and checks the tree digests ZooKeeper stored.
func (t *Tree) replay(logs []dataFile, dg *snapDigest) error {
	next := t.zxid + 1
	started := false
	last, lastAt, lastFile := t.zxid, int64(-1), t.report.Snapshot.Path

	dc := newDigestCheck(t, dg)
	for _, f := range logs {
		fh, err := os.Open(f.path)
		if err != nil {
			return fmt.Errorf("zkdata: %w", err)
		}
		lf := LogFile{Path: f.path, Zxid: f.zxid}
		err = readLog(fh, f.size, &lf, func(off int64, e *entry) error {
			z := e.hdr.zxid
			if !started {
				// FileTxnIterator skips what the snapshot holds, then applies everything.
				if z < next {
					return nil
				}
				started = true
			}
			if z <= last && lastAt >= 0 {
				return &FormatError{File: f.path, Offset: off, What: fmt.Sprintf("zxid %#x does not follow %#x (%s)", z, last, where(lastFile, lastAt))}
			}
			if z>>32 == last>>32 && z != last+1 {
				return &FormatError{File: f.path, Offset: off, What: fmt.Sprintf("transactions %#x to %#x are missing: the one before is %#x (%s)", last+1, z-1, last, where(lastFile, lastAt))}
			}
			if err := t.apply(&e.hdr, &e.txn); err != nil {
				return &FormatError{File: f.path, Offset: off, What: fmt.Sprintf("zxid %#x (%s): %v", z, opName(e.hdr.typ), err)}
			}
			t.report.Txns++
			last, lastAt, lastFile = z, off, f.path
			dc.applied(e)
			return nil
		})
		fh.Close()
		t.report.Logs = append(t.report.Logs, lf)
		if err != nil {
			return err
		}
		if lf.NonZeroAfter >= 0 {
			t.warnf("%s: reading stopped at offset %d (%s) but non-zero bytes follow at offset %d; ZooKeeper ignores them too", lf.Path, lf.End, lf.Stop, lf.NonZeroAfter)
		}
	}
	dc.done()
	return nil
}

func where(file string, off int64) string {
	if off < 0 {
		return file
	}
	return fmt.Sprintf("%s offset %d", file, off)
}
