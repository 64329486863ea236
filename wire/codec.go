package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrMalformed is returned (wrapped) when a record cannot be decoded.
var ErrMalformed = errors.New("wire: malformed record")

// Encoder appends jute-encoded values to a byte slice. The zero value is ready to use.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an encoder that appends to buf (which may be nil).
func NewEncoder(buf []byte) *Encoder { return &Encoder{buf: buf} }

// Bytes returns the encoded bytes.
func (e *Encoder) Bytes() []byte { return e.buf }

// Len returns the number of encoded bytes.
func (e *Encoder) Len() int { return len(e.buf) }

// Reset empties the encoder, keeping its buffer.
func (e *Encoder) Reset() { e.buf = e.buf[:0] }

// SetBytes replaces the encoder's buffer (used to reuse pooled buffers).
func (e *Encoder) SetBytes(b []byte) { e.buf = b }

// Int32 appends a big-endian int.
func (e *Encoder) Int32(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }

// Int64 appends a big-endian long.
func (e *Encoder) Int64(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }

// Bool appends a one-byte boolean.
func (e *Encoder) Bool(v bool) {
	if v {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

// String appends a ustring (never null; an empty string has length 0).
func (e *Encoder) String(s string) {
	e.Int32(int32(len(s)))
	e.buf = append(e.buf, s...)
}

// Buffer appends a buffer; nil encodes as null (length -1), a non-nil empty slice as length 0.
func (e *Encoder) Buffer(b []byte) {
	if b == nil {
		e.Int32(-1)
		return
	}
	e.Int32(int32(len(b)))
	e.buf = append(e.buf, b...)
}

// Raw appends bytes without a length prefix (pre-encoded records).
func (e *Encoder) Raw(b []byte) { e.buf = append(e.buf, b...) }

// Strings appends a vector of ustrings; nil encodes as a null vector (-1).
func (e *Encoder) Strings(ss []string) {
	if ss == nil {
		e.Int32(-1)
		return
	}
	e.Int32(int32(len(ss)))
	for _, s := range ss {
		e.String(s)
	}
}

// Decoder reads jute-encoded values from a byte slice. Errors are sticky: after the first
// failure every read returns a zero value and Err reports the failure.
type Decoder struct {
	buf []byte
	off int
	err error
}

// NewDecoder returns a decoder over b. Decoded buffers alias b; copy them if b is reused.
func NewDecoder(b []byte) *Decoder { return &Decoder{buf: b} }

// Reset points the decoder at a new buffer.
func (d *Decoder) Reset(b []byte) { d.buf, d.off, d.err = b, 0, nil }

// Err returns the first decoding error.
func (d *Decoder) Err() error { return d.err }

// Remaining returns the number of undecoded bytes.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

// Offset returns the number of bytes consumed so far.
func (d *Decoder) Offset() int { return d.off }

// Rest returns the undecoded bytes without consuming them.
func (d *Decoder) Rest() []byte { return d.buf[d.off:] }

// setErr records err as the decoder's error unless one is already recorded.
func (d *Decoder) setErr(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *Decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: short or invalid %s at offset %d of %d", ErrMalformed, what, d.off, len(d.buf))
	}
}

// Int32 reads a big-endian int.
func (d *Decoder) Int32() int32 {
	if d.err != nil || len(d.buf)-d.off < 4 {
		d.fail("int")
		return 0
	}
	v := int32(binary.BigEndian.Uint32(d.buf[d.off:]))
	d.off += 4
	return v
}

// Int64 reads a big-endian long.
func (d *Decoder) Int64() int64 {
	if d.err != nil || len(d.buf)-d.off < 8 {
		d.fail("long")
		return 0
	}
	v := int64(binary.BigEndian.Uint64(d.buf[d.off:]))
	d.off += 8
	return v
}

// Bool reads a one-byte boolean (any non-zero byte is true, as in jute).
func (d *Decoder) Bool() bool {
	if d.err != nil || len(d.buf)-d.off < 1 {
		d.fail("boolean")
		return false
	}
	v := d.buf[d.off] != 0
	d.off++
	return v
}

// bytes reads a length-prefixed byte run; null yields nil.
func (d *Decoder) bytes(what string) []byte {
	n := d.Int32()
	if d.err != nil {
		return nil
	}
	if n == -1 {
		return nil
	}
	if n < 0 || int(n) > len(d.buf)-d.off {
		d.fail(what + " length")
		return nil
	}
	b := d.buf[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return b
}

// String reads a ustring; null decodes as "".
func (d *Decoder) String() string { return string(d.bytes("ustring")) }

// Buffer reads a buffer; null decodes as nil, empty as a non-nil empty slice. The result aliases
// the decoder's input.
func (d *Decoder) Buffer() []byte {
	return d.bytes("buffer")
}

// VectorLen reads a vector count and checks that at least min bytes per element remain.
// A null vector (-1) yields -1.
func (d *Decoder) VectorLen(minElem int) int {
	n := d.Int32()
	if d.err != nil {
		return 0
	}
	if n == -1 {
		return -1
	}
	if n < 0 || (minElem > 0 && int64(n)*int64(minElem) > int64(len(d.buf)-d.off)) || n > math.MaxInt32/2 {
		d.fail("vector length")
		return 0
	}
	return int(n)
}

// Strings reads a vector of ustrings; a null vector decodes as nil.
func (d *Decoder) Strings() []string {
	n := d.VectorLen(4)
	if n <= 0 {
		if n == 0 && d.err == nil {
			return []string{}
		}
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.String()
	}
	return out
}
