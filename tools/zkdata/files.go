package zkdata

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The file name prefixes ZooKeeper uses inside version-2/ (FileSnap.SNAPSHOT_FILE_PREFIX,
// FileTxnLog.LOG_FILE_PREFIX) and the directory it appends to dataDir and dataLogDir
// (FileTxnSnapLog.version + VERSION).
const (
	snapPrefix = "snapshot"
	logPrefix  = "log"
	versionDir = "version-2"
)

// maxSnapshotTries is how many valid-looking snapshots are tried, newest first, before giving up
// (FileSnap.deserialize: findNValidSnapshots(100)).
const maxSnapshotTries = 100

// compression is how a snapshot file is encoded, chosen by its last name part as
// SnapStream.getStreamMode does: ".gz" gzip, ".snappy" snappy-java's stream, anything else plain.
type compression uint8

const (
	plain compression = iota
	gzipped
	snappied
)

func (c compression) String() string {
	switch c {
	case gzipped:
		return "gzip"
	case snappied:
		return "snappy"
	}
	return "plain"
}

// dataFile is a snapshot or log file found in a version-2 directory.
type dataFile struct {
	path string
	zxid int64 // from the name
	size int64
	comp compression // snapshots only
}

// zxidFromName parses "<prefix>.<hex zxid>[.anything]" as Util.getZxidFromName does: the name
// split at dots, the first part the prefix, the second a hex zxid. ok is false for other names.
func zxidFromName(name, prefix string) (int64, bool) {
	parts := strings.Split(name, ".")
	if len(parts) < 2 || parts[0] != prefix || parts[1] == "" {
		return 0, false
	}
	z, err := strconv.ParseInt(parts[1], 16, 64)
	if err != nil || z < 0 {
		return 0, false
	}
	return z, true
}

func compressionOf(name string) compression {
	parts := strings.Split(name, ".")
	if len(parts) < 2 {
		return plain
	}
	switch strings.ToLower(parts[len(parts)-1]) {
	case "gz":
		return gzipped
	case "snappy":
		return snappied
	}
	return plain
}

// resolveDir returns dir/version-2, or dir itself when it is already a version-2 directory.
func resolveDir(dir string) (string, error) {
	v := filepath.Join(dir, versionDir)
	if st, err := os.Stat(v); err == nil && st.IsDir() {
		return v, nil
	}
	if filepath.Base(filepath.Clean(dir)) == versionDir {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir, nil
		}
	}
	return "", fmt.Errorf("zkdata: %s: no %s directory (is this a ZooKeeper dataDir?)", dir, versionDir)
}

// listDir returns the snapshots (newest first) and logs (oldest first) in dir.
func listDir(dir string) (snaps, logs []dataFile, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("zkdata: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		name := e.Name()
		info, err := e.Info()
		if err != nil {
			return nil, nil, fmt.Errorf("zkdata: %w", err)
		}
		f := dataFile{path: filepath.Join(dir, name), size: info.Size()}
		if z, ok := zxidFromName(name, snapPrefix); ok {
			f.zxid, f.comp = z, compressionOf(name)
			snaps = append(snaps, f)
		} else if z, ok := zxidFromName(name, logPrefix); ok {
			f.zxid = z
			logs = append(logs, f)
		}
	}
	sort.SliceStable(snaps, func(i, j int) bool { return snaps[i].zxid > snaps[j].zxid })
	sort.SliceStable(logs, func(i, j int) bool { return logs[i].zxid < logs[j].zxid })
	return snaps, logs, nil
}

// checkSeparateDirs refuses a snapshot directory holding logs or a log directory holding
// snapshots when the two differ, as FileTxnSnapLog does (checkLogDir, checkSnapDir): it means
// dataDir and dataLogDir were given the wrong way round or mixed up.
func checkSeparateDirs(snapDir, logDir string, snapsInLogDir, logsInSnapDir bool) error {
	if snapsInLogDir {
		return fmt.Errorf("zkdata: log directory %s holds snapshot files; check dataDir and dataLogDir", logDir)
	}
	if logsInSnapDir {
		return fmt.Errorf("zkdata: snapshot directory %s holds log files; check dataDir and dataLogDir", snapDir)
	}
	return nil
}

// logsFrom selects the logs that can hold zxid and everything after it, as
// FileTxnIterator.init does: every log whose name zxid is >= zxid, and the newest one that
// starts before it. logs is sorted oldest first; so is the result.
func logsFrom(logs []dataFile, zxid int64) []dataFile {
	start := len(logs)
	for i := len(logs) - 1; i >= 0; i-- {
		start = i
		if logs[i].zxid < zxid {
			break
		}
	}
	return logs[start:]
}
