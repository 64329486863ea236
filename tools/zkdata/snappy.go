package zkdata

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/golang/snappy"
)

// snappyReader decodes the stream snappy-java's SnappyOutputStream writes, which ZooKeeper uses
// for snapshots with zookeeper.snapshot.compression.method=snappy: a 16-byte header (the magic
// bytes, a version and the oldest compatible version, both ints), then chunks, each a 4-byte
// big-endian length and a raw snappy block. A header may appear again between chunks, where
// streams were concatenated (SnappyInputStream.hasNextChunk).
type snappyReader struct {
	r    *bufio.Reader
	size int64 // of the compressed file, bounding chunk lengths
	comp []byte
	buf  []byte // the decoded chunk
	pos  int
	err  error
}

const snappyHeaderSize = 16

func newSnappyReader(r io.Reader, size int64) (*snappyReader, error) {
	s := &snappyReader{r: bufio.NewReaderSize(r, 64<<10), size: size}
	var h [snappyHeaderSize]byte
	if _, err := io.ReadFull(s.r, h[:]); err != nil || !bytes.Equal(h[:len(snappyMagic)], snappyMagic) {
		return nil, fmt.Errorf("expected a snappy-java stream header")
	}
	return s, nil
}

func (s *snappyReader) Read(p []byte) (int, error) {
	for s.pos == len(s.buf) {
		if s.err != nil {
			return 0, s.err
		}
		s.err = s.next()
	}
	n := copy(p, s.buf[s.pos:])
	s.pos += n
	return n, nil
}

// next decodes the next chunk into buf; io.EOF at a clean end of the stream.
func (s *snappyReader) next() error {
	var h [4]byte
	if n, err := io.ReadFull(s.r, h[:]); err != nil {
		if n == 0 && err == io.EOF {
			return io.EOF
		}
		return io.ErrUnexpectedEOF
	}
	if bytes.Equal(h[:], snappyMagic[:4]) {
		var rest [snappyHeaderSize - 4]byte
		if _, err := io.ReadFull(s.r, rest[:]); err != nil || !bytes.Equal(rest[:4], snappyMagic[4:]) {
			return fmt.Errorf("snappy: bad stream header between chunks")
		}
		s.buf, s.pos = s.buf[:0], 0
		return nil
	}
	n := int32(binary.BigEndian.Uint32(h[:]))
	if n < 0 || int64(n) > s.size {
		return fmt.Errorf("snappy: chunk length %d in a file of %d bytes", n, s.size)
	}
	if cap(s.comp) < int(n) {
		s.comp = make([]byte, n)
	}
	s.comp = s.comp[:n]
	if _, err := io.ReadFull(s.r, s.comp); err != nil {
		return io.ErrUnexpectedEOF
	}
	dlen, err := snappy.DecodedLen(s.comp)
	if err != nil {
		return fmt.Errorf("snappy: %w", err)
	}
	// A snappy block expands at most about 22 times; refuse lengths no block can reach before
	// allocating them.
	if dlen > 32*len(s.comp)+64 {
		return fmt.Errorf("snappy: a chunk of %d bytes claims %d decoded bytes", len(s.comp), dlen)
	}
	if cap(s.buf) < dlen {
		s.buf = make([]byte, dlen)
	}
	out, err := snappy.Decode(s.buf[:cap(s.buf)], s.comp)
	if err != nil {
		return fmt.Errorf("snappy: %w", err)
	}
	s.buf, s.pos = out, 0
	return nil
}
