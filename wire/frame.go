package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrFrameTooLarge is returned (wrapped with the length) by ReadFrame for a negative length or one
// above the limit; ZooKeeper closes the connection in that case ("Len error").
var ErrFrameTooLarge = errors.New("wire: frame length out of range")

// ReadFrame reads one int32-length-prefixed frame from r into buf, growing it if its capacity is too
// small, and returns the payload. A length below 0 or above max yields ErrFrameTooLarge; IO errors
// are returned as they are (io.EOF before the first byte, io.ErrUnexpectedEOF inside a frame).
// Check for a four-letter word (FourLetterWord on r.Peek(4)) before the first call on a connection.
func ReadFrame(r *bufio.Reader, buf []byte, max int) ([]byte, error) {
	hdr, err := r.Peek(4)
	if err != nil {
		if err == io.EOF && len(hdr) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return buf[:0], err
	}
	n := int64(int32(binary.BigEndian.Uint32(hdr)))
	if n < 0 || n > int64(max) {
		return buf[:0], fmt.Errorf("%w: %d (max %d)", ErrFrameTooLarge, n, max)
	}
	r.Discard(4)
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return buf[:0], err
	}
	return buf, nil
}

// WriteFrame writes payload to w as one length-prefixed frame.
func WriteFrame(w io.Writer, payload []byte) error {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(payload)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// AppendFrame appends payload to dst as one length-prefixed frame.
func AppendFrame(dst, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...)
}

// BeginFrame appends a 4-byte length placeholder and returns its offset, for EndFrame.
func BeginFrame(e *Encoder) (mark int) {
	mark = len(e.buf)
	e.buf = append(e.buf, 0, 0, 0, 0)
	return mark
}

// EndFrame fills in the length placeholder at mark with the number of bytes encoded since.
func EndFrame(e *Encoder, mark int) {
	binary.BigEndian.PutUint32(e.buf[mark:], uint32(len(e.buf)-mark-4))
}

// encoderPool holds Encoders for AppendReply: an Encoder passed to an interface method escapes, so a
// local one would be allocated on every call.
var encoderPool = sync.Pool{New: func() any { return new(Encoder) }}

// AppendReply appends a full reply frame: length prefix, header and body (a nil body gives a
// header-only frame, as for every error reply). It does not allocate beyond growing dst.
func AppendReply(dst []byte, h ReplyHeader, body Record) []byte {
	e := encoderPool.Get().(*Encoder)
	e.buf = dst
	mark := BeginFrame(e)
	h.Encode(e)
	if body != nil {
		body.Encode(e)
	}
	EndFrame(e, mark)
	dst, e.buf = e.buf, nil
	encoderPool.Put(e)
	return dst
}

// AppendEvent appends a full notification frame: header {xid -1, zxid -1, err 0}, as ZooKeeper 3.8
// sends it, then the event.
func AppendEvent(dst []byte, ev WatcherEvent) []byte {
	e := Encoder{buf: dst}
	mark := BeginFrame(&e)
	h := ReplyHeader{Xid: XidNotification, Zxid: -1}
	h.Encode(&e)
	ev.Encode(&e)
	EndFrame(&e, mark)
	return e.buf
}

// fourLetterWords is ZooKeeper 3.8's FourLetterCommands set.
var fourLetterWords = [...]string{
	"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "ruok", "stmk",
	"srvr", "srst", "stat", "wchc", "wchp", "wchs", "mntr", "isro", "hash",
}

// FourLetterWord reports whether the first four bytes of a fresh connection are a four-letter word,
// and which. (stmk is followed by an 8-byte trace mask, which the caller reads.)
func FourLetterWord(first4 []byte) (word string, ok bool) {
	if len(first4) < 4 {
		return "", false
	}
	for _, w := range fourLetterWords {
		if string(first4[:4]) == w {
			return w, true
		}
	}
	return "", false
}
