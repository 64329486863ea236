package replica

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble"
	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/corral/corral/shard"
)

// Snapshot stream: the magic, then every key/value of a pebble snapshot in key order as
// (uvarint len(key) | key | uvarint len(value) | value), then a 0 byte (keys are never empty),
// then the CRC-32 (IEEE, big-endian) of everything before it. The stream is a deterministic
// function of the state at PrepareSnapshot.
var snapshotMagic = []byte("CORRAL-SHARD-SNAPSHOT-1\n")

const recoverBatchBytes = 4 << 20

// PrepareSnapshot writes the pending changes and captures a pebble snapshot of the state as of
// the last Update.
func (m *Machine) PrepareSnapshot() (interface{}, error) {
	if m.closed.Load() {
		return nil, ErrClosed
	}
	if err := m.flushDirty(); err != nil {
		return nil, err
	}
	return m.db.NewSnapshot(), nil
}

// SaveSnapshot streams the prepared pebble snapshot to w; it runs concurrently with Update and
// releases the snapshot.
func (m *Machine) SaveSnapshot(ctx interface{}, w io.Writer, stopc <-chan struct{}) error {
	snap, ok := ctx.(*pebble.Snapshot)
	if !ok {
		return fmt.Errorf("shard: SaveSnapshot got %T", ctx)
	}
	defer snap.Close()
	crc := crc32.NewIEEE()
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 64<<10)
	if _, err := bw.Write(snapshotMagic); err != nil {
		return err
	}
	it := snap.NewIter(nil)
	defer it.Close()
	var hdr [binary.MaxVarintLen64]byte
	count := 0
	for ok := it.First(); ok; ok = it.Next() {
		if count++; count%1024 == 0 {
			select {
			case <-stopc:
				return sm.ErrSnapshotStopped
			default:
			}
		}
		for _, b := range [2][]byte{it.Key(), it.Value()} {
			if _, err := bw.Write(hdr[:binary.PutUvarint(hdr[:], uint64(len(b)))]); err != nil {
				return err
			}
			if _, err := bw.Write(b); err != nil {
				return err
			}
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("shard: reading snapshot: %w", err)
	}
	if err := bw.WriteByte(0); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(binary.BigEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

// RecoverFromSnapshot replaces the replica's state with a snapshot: it writes the stream into a
// fresh pebble directory db-<gen+1>, syncs it, loads it, atomically points `current` at it,
// closes and deletes the old DB, and publishes the new view (no events).
func (m *Machine) RecoverFromSnapshot(r io.Reader, stopc <-chan struct{}) error {
	if m.closed.Load() {
		return ErrClosed
	}
	gen := m.gen + 1
	dir := filepath.Join(m.cfg.Dir, dbDirName(gen))
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	db, err := openDB(dir, m.log)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		db.Close()
		os.RemoveAll(dir)
		return err
	}
	if err := readSnapshot(db, r, stopc); err != nil {
		return fail(err)
	}
	s, applied, found, err := loadState(db, m.cfg.state())
	if err != nil {
		return fail(err)
	}
	if !found {
		return fail(fmt.Errorf("%w: snapshot without state", shard.ErrCorruptStore))
	}
	if err := writeCurrent(m.cfg.Dir, gen); err != nil {
		return fail(err)
	}
	old, oldDir := m.db, filepath.Join(m.cfg.Dir, dbDirName(m.gen))
	s.AttachReplica(m.cfg.Taps, m.cfg.ShardID)
	m.retire(old)
	m.db, m.gen, m.state, m.applied, m.flushed = db, gen, s, applied, applied
	m.noteStats()
	if err := old.Close(); err != nil {
		m.log.Warn("closing replaced store", "err", err)
	}
	if err := os.RemoveAll(oldDir); err != nil {
		m.log.Warn("removing replaced store", "dir", oldDir, "err", err)
	}
	m.publish(nil)
	return nil
}

// readSnapshot copies a snapshot stream into db and syncs it.
func readSnapshot(db *pebble.DB, r io.Reader, stopc <-chan struct{}) error {
	crc := crc32.NewIEEE()
	br := bufio.NewReaderSize(r, 64<<10)
	tr := &teeByteReader{r: br, h: crc}
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(tr, magic); err != nil || string(magic) != string(snapshotMagic) {
		return fmt.Errorf("%w: bad snapshot header", shard.ErrCorruptStore)
	}
	b := db.NewBatch()
	defer func() { b.Close() }()
	var key, val []byte
	for count := 1; ; count++ {
		if count%1024 == 0 {
			select {
			case <-stopc:
				return sm.ErrSnapshotStopped
			default:
			}
		}
		var err error
		if key, err = readChunk(tr, key); err != nil {
			return err
		}
		if len(key) == 0 {
			break
		}
		if val, err = readChunk(tr, val); err != nil {
			return err
		}
		_ = b.Set(key, val, nil)
		if b.Len() >= recoverBatchBytes {
			if err := db.Apply(b, pebble.NoSync); err != nil {
				return err
			}
			b.Close()
			b = db.NewBatch()
		}
	}
	want := crc.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(br, sum[:]); err != nil || binary.BigEndian.Uint32(sum[:]) != want {
		return fmt.Errorf("%w: snapshot checksum mismatch", shard.ErrCorruptStore)
	}
	if err := db.Apply(b, pebble.NoSync); err != nil {
		return err
	}
	return db.Flush() // durable before the `current` pointer names this store
}

// readChunk reads a uvarint length and that many bytes into buf.
func readChunk(r *teeByteReader, buf []byte) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, fmt.Errorf("%w: truncated snapshot: %v", shard.ErrCorruptStore, err)
	}
	if n > 1<<31 {
		return nil, fmt.Errorf("%w: snapshot record of %d bytes", shard.ErrCorruptStore, n)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("%w: truncated snapshot: %v", shard.ErrCorruptStore, err)
	}
	return buf, nil
}

// teeByteReader feeds everything read through it into a hash.
type teeByteReader struct {
	r *bufio.Reader
	h io.Writer
}

func (t *teeByteReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.h.Write(p[:n])
	return n, err
}

func (t *teeByteReader) ReadByte() (byte, error) {
	c, err := t.r.ReadByte()
	if err == nil {
		t.h.Write([]byte{c})
	}
	return c, err
}
