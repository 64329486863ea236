package zkdata

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"io"
	"slices"

	"github.com/corral/corral/wire"
)

// stream reads jute values (big-endian ints and longs, length-prefixed buffers and strings)
// from a snapshot as it is decompressed, keeping the byte offset and the Adler-32 of everything
// consumed so far: the checksum SnapStream's CheckedInputStream computes. Errors are sticky and
// are FormatErrors naming the file, the offset of the value and what was expected.
type stream struct {
	r    *bufio.Reader
	sum  hash.Hash32
	off  int64
	file string
	comp bool  // offsets count uncompressed bytes
	size int64 // of an uncompressed file, -1 when unknown
	err  error

	scratch [16]byte
}

func newStream(r io.Reader, file string, size int64, comp bool) *stream {
	buf := 256 << 10
	if comp {
		buf = 64 << 10 // what the decompressor hands over at a time
	} else if size >= 0 && size < int64(buf) {
		buf = int(size) // bufio makes it at least 16 bytes, enough for fixed
	}
	s := &stream{r: bufio.NewReaderSize(r, buf), sum: adler32.New(), file: file, comp: comp, size: -1}
	if !comp {
		s.size = size
	}
	return s
}

// fail records a FormatError at off unless an error is recorded already.
func (s *stream) fail(off int64, format string, args ...any) { s.failErr(off, nil, format, args...) }

func (s *stream) failErr(off int64, cause error, format string, args ...any) {
	if s.err == nil {
		s.err = &FormatError{File: s.file, Offset: off, Uncompressed: s.comp, What: fmt.Sprintf(format, args...), Err: cause}
	}
}

// eof reports whether the input ended early.
func (s *stream) eof() bool { return errors.Is(s.err, io.ErrUnexpectedEOF) }

// fixed consumes n bytes (n <= 16) and returns them; nil after an error.
func (s *stream) fixed(n int, what string) []byte {
	if s.err != nil {
		return nil
	}
	b, err := s.r.Peek(n)
	if len(b) < n {
		if err == nil || err == io.EOF {
			s.failErr(s.off, io.ErrUnexpectedEOF, "expected %s, the input ends after %d more bytes", what, len(b))
		} else {
			s.failErr(s.off, err, "reading %s: %v", what, err)
		}
		return nil
	}
	b = s.scratch[:copy(s.scratch[:], b)]
	s.sum.Write(b)
	s.r.Discard(n)
	s.off += int64(n)
	return b
}

func (s *stream) int32(what string) int32 {
	b := s.fixed(4, what)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (s *stream) int64(what string) int64 {
	b := s.fixed(8, what)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// bytes reads a jute buffer: nil for null (-1), a fresh slice otherwise.
func (s *stream) bytes(what string) []byte {
	at := s.off
	n := s.int32(what + " length")
	if s.err != nil || n == -1 {
		return nil
	}
	return s.bytesOf(at, n, what)
}

// bytesOf reads the n bytes of a buffer whose length, at at, was read already.
func (s *stream) bytesOf(at int64, n int32, what string) []byte {
	if n < 0 {
		s.fail(at, "expected %s length, found %d", what, n)
		return nil
	}
	if s.size >= 0 && int64(n) > s.size-s.off {
		s.failErr(at, io.ErrUnexpectedEOF, "%s of %d bytes runs past the end of the file", what, n)
		return nil
	}
	var out []byte
	if s.size >= 0 || n <= 1<<20 {
		out = make([]byte, n)
		if m, err := io.ReadFull(s.r, out); err != nil {
			s.short(at, what, int(n), m, err)
			return nil
		}
	} else {
		// A length in a compressed stream cannot be checked up front: grow as bytes arrive, so
		// that a corrupt length costs no more memory than the input really holds.
		for len(out) < int(n) {
			k := min(int(n)-len(out), 1<<20)
			out = slices.Grow(out, k)
			m, err := io.ReadFull(s.r, out[len(out):len(out)+k])
			out = out[:len(out)+m]
			if err != nil {
				s.short(at, what, int(n), len(out), err)
				return nil
			}
		}
	}
	s.sum.Write(out)
	s.off += int64(n)
	return out
}

func (s *stream) short(at int64, what string, want, got int, err error) {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		s.failErr(at, io.ErrUnexpectedEOF, "%s of %d bytes, the input ends after %d", what, want, got)
		return
	}
	s.failErr(at, err, "reading %s: %v", what, err)
}

// count reads a count, which must not be negative.
func (s *stream) count(what string) int32 {
	at := s.off
	n := s.int32(what)
	if n < 0 {
		s.fail(at, "expected %s, found %d", what, n)
		return 0
	}
	return n
}

// string reads a jute ustring; null reports ok=false.
func (s *stream) string(what string) (string, bool) {
	at := s.off
	n := s.int32(what + " length")
	if s.err != nil || n == -1 {
		return "", false
	}
	if n < 0 || int(n) > s.r.Size() {
		// Invalid, or longer than the read buffer.
		b := s.bytesOf(at, n, what)
		return string(b), b != nil
	}
	b, err := s.r.Peek(int(n))
	if len(b) < int(n) {
		s.short(at, what, int(n), len(b), err)
		return "", false
	}
	s.sum.Write(b)
	str := string(b)
	s.r.Discard(int(n))
	s.off += int64(n)
	return str, true
}

// acls reads a vector of ACL entries; a null vector is an error (ReferenceCountedACLCache
// refuses it).
func (s *stream) acls() []wire.ACL {
	at := s.off
	n := s.int32("ACL vector length")
	if s.err != nil {
		return nil
	}
	if n < 0 || (s.size >= 0 && int64(n)*12 > s.size-s.off) {
		s.fail(at, "expected an ACL vector length, found %d", n)
		return nil
	}
	out := make([]wire.ACL, 0, min(int(n), 64))
	for i := int32(0); i < n && s.err == nil; i++ {
		var a wire.ACL
		a.Perms = s.int32("ACL perms")
		a.ID.Scheme, _ = s.string("ACL scheme")
		a.ID.ID, _ = s.string("ACL id")
		out = append(out, a)
	}
	return out
}
