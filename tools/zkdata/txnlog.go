package zkdata

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
)

// The transaction log's file header (FileHeader: magic "ZKLG", version, dbid) and the byte that
// ends every entry (Util.writeTxnBytes).
const (
	logMagic      = 0x5a4b4c47
	logHeaderSize = 16
	entryEnd      = 'B'
)

// LogFile describes a transaction log as it was read.
type LogFile struct {
	Path string
	// Zxid is the zxid in the file name: the log was started for that transaction.
	Zxid int64
	// First and Last are the zxids of the first and last entries read, Entries how many.
	First, Last int64
	Entries     int
	// End is the offset where reading stopped and Stop why: the end of the file, the zeros
	// ZooKeeper preallocates log files with, or an entry cut short by a crash. ZooKeeper stops
	// reading a log at any of these and goes on with the next log, and so does Open.
	End  int64
	Stop string
	// NonZeroAfter is the offset of the first non-zero byte at or after End, -1 when the rest of
	// the file is zeros. ZooKeeper ignores those bytes too; they are worth a look when the log is
	// not the last one.
	NonZeroAfter int64
}

// readLog reads the entries of a log of size bytes from r, checking each entry's Adler-32, and
// calls fn with each entry and its offset. It stops quietly where ZooKeeper's FileTxnIterator
// stops (the input ends inside an entry, a zero or null entry length, an entry not followed by
// 'B'), recording where and why in lf; a bad magic number, a bad checksum, an impossible length
// or an entry that does not decode is a FormatError at the entry's offset.
func readLog(r io.Reader, size int64, lf *LogFile, fn func(off int64, e *entry) error) error {
	br := bufio.NewReaderSize(r, 256<<10)
	lf.NonZeroAfter = -1
	var hdr [logHeaderSize]byte
	if n, err := io.ReadFull(br, hdr[:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			lf.End, lf.Stop = 0, fmt.Sprintf("no file header (the file has %d bytes)", n)
			return nil
		}
		return fmt.Errorf("zkdata: %s: %w", lf.Path, err)
	}
	if m := binary.BigEndian.Uint32(hdr[:]); m != logMagic {
		return &FormatError{File: lf.Path, What: fmt.Sprintf("expected the transaction log magic number %#x (\"ZKLG\"), found %#x", logMagic, m)}
	}
	off := int64(logHeaderSize)
	var head [12]byte
	ended := func(why string) error {
		lf.End, lf.Stop = off, why
		return nil
	}
	// skipped records a stop at the entry at off, whose first n bytes were read, and looks for
	// non-zero bytes after them.
	skipped := func(why string, n int64) error {
		lf.End, lf.Stop = off, why
		nz, err := firstNonZero(br, off+n)
		if err != nil {
			return fmt.Errorf("zkdata: %s: %w", lf.Path, err)
		}
		lf.NonZeroAfter = nz
		return nil
	}
	for {
		n, err := io.ReadFull(br, head[:])
		if err != nil {
			if n == 0 && err == io.EOF {
				return ended("end of file")
			}
			if err == io.ErrUnexpectedEOF {
				return ended(fmt.Sprintf("entry cut short: the file ends %d bytes into it", n))
			}
			return fmt.Errorf("zkdata: %s: %w", lf.Path, err)
		}
		crc := binary.BigEndian.Uint64(head[:8])
		length := int32(binary.BigEndian.Uint32(head[8:]))
		switch {
		case length == 0:
			// Preallocated space, or an entry whose length never reached the disk.
			return skipped("zero-filled tail", 12)
		case length == -1:
			return skipped("null entry (length -1)", 12)
		case length < 0:
			return &FormatError{File: lf.Path, Offset: off, What: fmt.Sprintf("expected an entry length, found %d", length)}
		case int64(length) > size-off-12:
			return ended(fmt.Sprintf("entry of %d bytes cut short: the file ends %d bytes into it", length, size-off))
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(br, body); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return ended(fmt.Sprintf("entry of %d bytes cut short by the end of the file", length))
			}
			return fmt.Errorf("zkdata: %s: %w", lf.Path, err)
		}
		end, err := br.ReadByte()
		if err == io.EOF {
			return ended(fmt.Sprintf("entry of %d bytes without its end byte: the file ends", length))
		} else if err != nil {
			return fmt.Errorf("zkdata: %s: %w", lf.Path, err)
		}
		if end != entryEnd {
			// Util.readTxnBytes: "Last transaction was partial."
			return skipped(fmt.Sprintf("entry of %d bytes not followed by 'B' but %#x: a partial write", length, end), 13+int64(length))
		}
		if sum := uint64(adler32.Checksum(body)); sum != crc {
			return &FormatError{File: lf.Path, Offset: off, What: fmt.Sprintf("entry of %d bytes fails its checksum: stored Adler-32 %#x, computed %#x", length, crc, sum)}
		}
		e, err := decodeEntry(body)
		if err != nil {
			return &FormatError{File: lf.Path, Offset: off, What: fmt.Sprintf("entry of %d bytes: %v", length, err)}
		}
		if lf.Entries == 0 {
			lf.First = e.hdr.zxid
		}
		lf.Entries++
		lf.Last = e.hdr.zxid
		if err := fn(off, &e); err != nil {
			return err
		}
		off += 13 + int64(length)
	}
}

// firstNonZero returns the offset of the first non-zero byte left in r, which is at offset at,
// or -1 when all the rest is zeros.
func firstNonZero(r *bufio.Reader, at int64) (int64, error) {
	for {
		b, err := r.Peek(r.Size())
		for i, c := range b {
			if c != 0 {
				return at + int64(i), nil
			}
		}
		at += int64(len(b))
		r.Discard(len(b))
		if errors.Is(err, io.EOF) {
			return -1, nil
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return 0, err
		}
	}
}
