package inspect

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	pb "github.com/lni/dragonboat/v4/raftpb"
	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/corral/corral/format"
	"github.com/corral/corral/session"
)

// metaShardID is cluster.MetaShardID: the Raft group of the session table.
const metaShardID = 1

// MetaReport is the meta shard (the session table) as this server's Raft log holds it.
type MetaReport struct {
	LogDir        string // the tan log directory of the meta shard's replica
	SnapshotIndex uint64 // 0: no snapshot
	Snapshot      string // the snapshot file read, if any
	Committed     uint64 // the commit index persisted in the log
	Applied       uint64 // the last entry applied here (<= Committed)
	Level         format.Level
	Announced     map[uint64]format.Level
	Sessions      []session.Entry
}

// readMeta rebuilds the session table as the server would on restart: its latest snapshot,
// then the committed entries after it from dragonboat's tan log files, applied by
// session.Table. Everything is read with plain reads; nothing is written.
func (l *Layout) readMeta() (*MetaReport, error) {
	dir, logShardID, err := l.metaLogDir()
	if err != nil {
		return nil, err
	}
	m := &MetaReport{LogDir: dir}
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	sort.Slice(logs, func(i, j int) bool { return logNum(logs[i]) < logNum(logs[j]) })
	var (
		ents []pb.Entry // contiguous, by index
		snap pb.Snapshot
	)
	for _, fn := range logs {
		err := readLogFile(fn, func(u *pb.Update) {
			if u.ShardID != logShardID || l.MyID != 0 && u.ReplicaID != l.MyID {
				return
			}
			if len(u.EntriesToSave) == 0 && pb.IsEmptySnapshot(u.Snapshot) && u.Term == compactionFlag {
				return // tan's record of a log compaction, not a Raft state
			}
			if !pb.IsEmptySnapshot(u.Snapshot) && u.Snapshot.Index >= snap.Index {
				snap = u.Snapshot
			}
			for _, e := range u.EntriesToSave {
				// A later write of an index replaces it and everything after it (a new leader
				// overwrote an uncommitted tail).
				if n := len(ents); n > 0 && e.Index <= ents[n-1].Index {
					k := sort.Search(n, func(i int) bool { return ents[i].Index >= e.Index })
					ents = ents[:k]
				}
				if n := len(ents); n > 0 && e.Index != ents[n-1].Index+1 {
					ents = ents[:0] // a gap: what came before was compacted away
				}
				ents = append(ents, e)
			}
			if !pb.IsEmptyState(u.State) {
				m.Committed = u.Commit
			}
		})
		if err != nil {
			return nil, err
		}
	}
	t := session.NewTable(nil)
	if snap.Index > 0 {
		m.SnapshotIndex = snap.Index
		if m.Snapshot, err = l.loadMetaSnapshot(snap, t); err != nil {
			return nil, err
		}
	}
	m.Applied = snap.Index
	for _, e := range ents {
		if e.Index <= m.Applied {
			continue
		}
		if e.Index > m.Committed {
			break
		}
		if e.Index != m.Applied+1 {
			return nil, fmt.Errorf("meta shard log %s: entries %d..%d are missing (compacted without a snapshot?)", dir, m.Applied+1, e.Index-1)
		}
		m.Applied = e.Index
		if !e.IsUpdateEntry() {
			continue // config changes, dragonboat's no-ops and session registrations
		}
		cmd := e.Cmd
		if e.Type == pb.EncodedEntry {
			if len(cmd) == 0 || cmd[0] != 0 {
				return nil, fmt.Errorf("meta shard entry %d: compressed entries are not supported", e.Index)
			}
			cmd = cmd[1:]
		}
		if _, err := t.Update(sm.Entry{Index: e.Index, Cmd: cmd}); err != nil {
			return nil, fmt.Errorf("meta shard entry %d: %w", e.Index, err)
		}
	}
	m.Level, m.Announced, m.Sessions = t.Level(), t.Announced(), t.List()
	return m, nil
}

// compactionFlag is the Term tan gives its compaction records (internal/tan/db.go).
const compactionFlag uint64 = 1<<64 - 1 - 2

// metaLogDir finds the log directory holding the meta shard's replica and the shard id its
// records carry there. A server started on a new directory keeps one log for all its replicas
// (cluster/serverlog.go): <nodehost or WAL dir>/<hostname>/<deployment id>/tandb/shard-0, where
// shard s is recorded as s<<4. A directory written before that has a log per replica:
// .../tandb/node-1-<replica id>.
func (l *Layout) metaLogDir() (string, uint64, error) {
	var bases []string
	if l.DataLogDir != "" {
		bases = append(bases, filepath.Join(l.DataLogDir, "corral-wal"))
	}
	bases = append(bases, l.NodeHostDir)
	var found []string
	for _, b := range bases {
		m, _ := filepath.Glob(filepath.Join(b, "*", "*", "tandb", fmt.Sprintf("node-%d-*", metaShardID)))
		found = append(found, m...)
		if len(found) > 0 {
			break
		}
	}
	if len(found) == 0 {
		for _, b := range bases {
			m, _ := filepath.Glob(filepath.Join(b, "*", "*", "tandb", "shard-0"))
			switch len(m) {
			case 0:
				continue
			case 1:
				return m[0], metaShardID << serverLogShift, nil
			}
			return "", 0, fmt.Errorf("several server logs: %s", strings.Join(m, ", "))
		}
	}
	if l.MyID != 0 {
		suffix := fmt.Sprintf("-%d", l.MyID)
		var mine []string
		for _, f := range found {
			if strings.HasSuffix(f, suffix) {
				mine = append(mine, f)
			}
		}
		found = mine
	}
	switch len(found) {
	case 0:
		return "", 0, fmt.Errorf("no Raft log of the meta shard below %s", strings.Join(bases, " or "))
	case 1:
		return found[0], metaShardID, nil
	}
	return "", 0, fmt.Errorf("several Raft logs of the meta shard: %s", strings.Join(found, ", "))
}

// serverLogShift is cluster.serverLogShift: the server log records shard s as s<<4.
const serverLogShift = 4

func logNum(path string) uint64 {
	n, _ := strconv.ParseUint(strings.TrimSuffix(filepath.Base(path), ".log"), 10, 64)
	return n
}

// Snapshot file layout (dragonboat internal/rsm/snapshotio.go and rwv.go): a 1024-byte header
// (u64 LE length, the pb.SnapshotHeader, its CRC32, zero padding), then the payload: for
// version 1 the bytes as they are, for version 2 blocks of 2 MiB each followed by its CRC32
// and a 16-byte tail. The payload is dragonboat's client session table followed by the state
// machine's own snapshot.
const (
	snapshotHeaderSize = 1024
	snapshotBlockSize  = 2 << 20
	snapshotTailSize   = 16
)

// loadMetaSnapshot finds the snapshot file of snap and recovers t from it.
func (l *Layout) loadMetaSnapshot(snap pb.Snapshot, t *session.Table) (string, error) {
	fn := snap.Filepath
	if _, err := os.Stat(fn); err != nil {
		// The directory moved since: look the file up under this NodeHost directory.
		m, _ := filepath.Glob(filepath.Join(l.NodeHostDir, "*", "*", "snapshot-part-*",
			fmt.Sprintf("snapshot-%d-*", metaShardID), "*", filepath.Base(snap.Filepath)))
		if len(m) != 1 {
			return "", fmt.Errorf("meta shard snapshot at index %d: %s not found", snap.Index, snap.Filepath)
		}
		fn = m[0]
	}
	b, err := os.ReadFile(fn)
	if err != nil {
		return "", err
	}
	payload, err := snapshotPayload(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", fn, err)
	}
	// dragonboat's client session table comes first: u64 LE capacity, u64 LE count, the
	// sessions. Corral proposes without client sessions (no-op sessions): the count is 0.
	if len(payload) < 16 {
		return "", fmt.Errorf("%s: truncated snapshot payload", fn)
	}
	if n := binary.LittleEndian.Uint64(payload[8:]); n != 0 {
		return "", fmt.Errorf("%s: %d dragonboat client sessions in the snapshot; not supported", fn, n)
	}
	if err := t.RecoverFromSnapshot(bytes.NewReader(payload[16:]), nil, nil); err != nil {
		return "", fmt.Errorf("%s: %w", fn, err)
	}
	return fn, nil
}

func snapshotPayload(b []byte) ([]byte, error) {
	var h pb.SnapshotHeader
	if len(b) < snapshotHeaderSize {
		return nil, errors.New("shorter than a snapshot header")
	}
	n := binary.LittleEndian.Uint64(b)
	if n > snapshotHeaderSize-12 {
		return nil, errors.New("bad snapshot header length")
	}
	if err := h.Unmarshal(b[8 : 8+n]); err != nil {
		return nil, fmt.Errorf("snapshot header: %w", err)
	}
	if h.CompressionType != pb.NoCompression {
		return nil, fmt.Errorf("compressed snapshots (%v) are not supported", h.CompressionType)
	}
	body := b[snapshotHeaderSize:]
	switch h.Version {
	case 1:
		return body, nil
	case 2:
	default:
		return nil, fmt.Errorf("snapshot version %d not supported", h.Version)
	}
	if len(body) < snapshotTailSize {
		return nil, errors.New("truncated snapshot")
	}
	body = body[:len(body)-snapshotTailSize]
	var out []byte
	for len(body) > 0 {
		k := min(len(body), snapshotBlockSize+4)
		blk := body[:k]
		body = body[k:]
		if len(blk) < 4 {
			return nil, errors.New("truncated snapshot block")
		}
		data, sum := blk[:len(blk)-4], blk[len(blk)-4:]
		if binary.BigEndian.Uint32(sum) != crc32.ChecksumIEEE(data) {
			return nil, errors.New("snapshot block checksum mismatch")
		}
		out = append(out, data...)
	}
	return out, nil
}
