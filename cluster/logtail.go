package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/cespare/xxhash/v2"
	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/raftio"
)

// A torn write at the end of a preallocated log file.
//
// tan writes a record as chunks in 32 KiB blocks; each chunk has a header (checksum, length,
// type) and a payload, and the checksum covers the type and the payload. When tan opens a log
// file a crash left behind, it takes a zeroed chunk or a chunk that runs past the end of the
// file for the torn end of the log and keeps the records before it, but a chunk whose checksum
// does not match for corruption, and the store does not open (dragonboat panics starting the
// replicas: "tan: crc mismatch").
//
// A process killed in the middle of a write leaves a prefix of it on disk: Linux ends a write
// early at a page boundary once a fatal signal is pending. In a file of tan's own, whose size is
// what was written, the unfinished chunk then runs past the end of the file and tan takes it for
// a torn tail. In a log file logFileFS allocated up front, the rest of the chunk reads as the
// allocation's zeros, so its checksum does not match: the same torn write, reported as
// corruption.
//
// The invariant: a log file tan opens after a crash looks to it as a file of its own would after
// the same crash. tornTailFactory keeps it: before the store opens, every log file still at its
// allocated size (a file tan closed in order was cut back to its records) is scanned, and a
// chunk that is not whole, with nothing but zeros after the space it claims, is a torn write:
// it is overwritten with zeros, which tan reads as the end of the log (the records before it
// are kept; the unfinished record was never synced, so never acknowledged). A chunk that is not
// whole with data after it is not a torn write: it is logged and left for tan to refuse.

// Chunk format constants of tan's record files (pebble's record format).
const (
	chunkBlockSize        = 32 << 10
	chunkHeaderSize       = 7  // checksum (4), length (2), type (1)
	recyclableChunkHeader = 11 // the same and a log number (4), for chunk types 5 to 8
)

// logTail is what a scan of a log file found after its last whole chunk.
type logTail struct {
	end   int64 // the end of the last whole chunk, where the log's data ends
	last  int64 // the start of the last whole chunk, -1 when there is none
	torn  bool  // a chunk that is not whole starts at end and only zeros follow its space
	bad   bool  // a chunk that is not whole starts at end and data follows it
	claim int64 // with torn or bad: the end of the space the broken chunk claims in its block
}

// scanLogTail reads the chunks of a log file of the given size from its start until its data
// ends: at a zeroed chunk, at the end of the file, or at a chunk that is not whole (it runs
// past its block or its checksum does not match).
func scanLogTail(r io.ReaderAt, size int64) (logTail, error) {
	t := logTail{last: -1}
	buf := make([]byte, chunkBlockSize)
	for block := int64(0); block < size; block += chunkBlockSize {
		n, err := r.ReadAt(buf, block)
		if err != nil && err != io.EOF {
			return t, err
		}
		b := buf[:n]
		pos := 0
		for pos+chunkHeaderSize <= n {
			sum := binary.LittleEndian.Uint32(b[pos:])
			length := int(binary.LittleEndian.Uint16(b[pos+4:]))
			typ := b[pos+6]
			if sum == 0 && length == 0 && typ == 0 {
				if pos+recyclableChunkHeader > n {
					break // tan skips a zero remainder too short for a header
				}
				t.end = block + int64(pos)
				return t, nil
			}
			hdr := chunkHeaderSize
			if typ >= 5 && typ <= 8 {
				hdr = recyclableChunkHeader
			}
			if pos+hdr+length > n {
				t.end, t.claim = block+int64(pos), block+int64(n)
				return t, t.judge(r, size)
			}
			if uint32(xxhash.Sum64(b[pos+6:pos+hdr+length])) != sum {
				t.end, t.claim = block+int64(pos), block+int64(pos+hdr+length)
				return t, t.judge(r, size)
			}
			t.last = block + int64(pos)
			pos += hdr + length
		}
		t.end = block + int64(pos)
		if n < chunkBlockSize {
			break
		}
	}
	return t, nil
}

// judge sets torn or bad for a chunk that is not whole, from the bytes after the space it
// claims: a torn write left only zeros there.
func (t *logTail) judge(r io.ReaderAt, size int64) error {
	buf := make([]byte, 1<<20)
	for off := t.claim; off < size; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		for _, c := range buf[:n] {
			if c != 0 {
				t.bad = true
				return nil
			}
		}
		off += int64(n)
		if err == io.EOF || n == 0 {
			break
		}
		if err != nil {
			return err
		}
	}
	t.torn = true
	return nil
}

// mendTornTail scans the log file at path, allocated to logFileAlloc or more, and zeroes a torn
// write at its end (see above). It reports whether it changed the file.
func mendTornTail(path string, log *slog.Logger) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	t, err := scanLogTail(f, st.Size())
	if err != nil {
		return false, err
	}
	switch {
	case t.bad:
		log.Error("raft log file is corrupt: a chunk is not whole and data follows it; not a torn write, left as it is",
			"file", path, "offset", t.end)
		return false, nil
	case !t.torn:
		return false, nil
	}
	if _, err := f.WriteAt(make([]byte, t.claim-t.end), t.end); err != nil {
		return false, err
	}
	if err := fdatasync(int(f.Fd())); err != nil {
		return false, err
	}
	log.Warn("raft log file ended in a torn write (the server stopped during a write); the unfinished record is dropped",
		"file", path, "offset", t.end, "bytes", t.claim-t.end)
	return true, nil
}

// mendTornTails mends the log files under dirs that are still at their allocated size.
func mendTornTails(dirs []string, log *slog.Logger) error {
	seen := map[string]bool{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() || !logFileName.MatchString(d.Name()) || seen[p] {
				return nil
			}
			seen[p] = true
			info, err := d.Info()
			if err != nil || info.Size() < logFileAlloc {
				return err
			}
			_, err = mendTornTail(p, log)
			return err
		})
		if err != nil {
			return fmt.Errorf("cluster: checking the raft log files for a torn write: %w", err)
		}
	}
	return nil
}

// tornTailFactory opens the inner log store after mending torn writes at the end of its log
// files (see above). It does so only when the NodeHost's file system is logFileFS, the one that
// allocates log files up front.
type tornTailFactory struct {
	inner config.LogDBFactory
}

func (f tornTailFactory) Create(cfg config.NodeHostConfig, cb config.LogDBCallback,
	dirs []string, wals []string) (raftio.ILogDB, error) {
	if lf, ok := cfg.Expert.FS.(*logFileFS); ok {
		if err := mendTornTails(append(append([]string(nil), dirs...), wals...), lf.log); err != nil {
			return nil, err
		}
	}
	return f.inner.Create(cfg, cb, dirs, wals)
}

// Name is the inner store's name (the bytes on disk are its own).
func (f tornTailFactory) Name() string { return f.inner.Name() }
