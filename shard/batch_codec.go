package shard

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/corral/corral/wire"
)

// Batch encoding (the Raft entry's Cmd), all integers varint-encoded:
//
//	u8 version (3) | uvarint Proposer | uvarint Seq | varint Time
//	    | u8 flags (bit 0: Control, bit 1: SessionFence, bit 2: Epochs, bit 3: QuotaCount,
//	      bit 4: QuotaEnforce)
//	    | uvarint len(Ops) | Op...
//	Op: varint Session | varint Code | varint MinZxid | varint ViewZxid
//	    | [uvarint Epoch, with flag Epochs] | uvarint len(Auth)
//	    | (str Scheme, str ID)... | bytes Body
//	str: uvarint length + bytes; bytes: uvarint length+1 + bytes, 0 for nil.
//
// BatchResult encoding (the Raft entry's Result.Data):
//
//	u8 version (2) | u8 Status | uvarint len(Results) | (varint Err, varint Zxid, bytes Body)...
//
// Version 1 had no flags byte (every batch was a client batch) and the same result layout;
// version 2 had no ViewZxid (an op decoded from it gets ViewZxid = MinZxid, what the move fence
// compared before). The decoders still read both, so a replica can replay a log written before
// an upgrade; an older server cannot read version 3 (upgrade every server together).
//
// The flag Epochs is set when some op carries an Epoch; only servers at format level 2 put
// epochs in ops (format.Level2), so a server that cannot read the flag never sees it. The quota
// flags (Batch.Quota) likewise come only from servers at format.LevelQuota.
const batchVersion = 3

// resultVersion is the BatchResult layout's version (results are cached in the shard state).
const resultVersion = 2

const (
	batchFlagControl      = 1
	batchFlagSessionFence = 2
	batchFlagEpochs       = 4
	batchFlagQuotaCount   = 8  // Batch.Quota is QuotaCount or QuotaEnforce
	batchFlagQuotaEnforce = 16 // Batch.Quota is QuotaEnforce
)

// AppendTo appends the encoding of the batch to dst.
func (b *Batch) AppendTo(dst []byte) []byte {
	dst = append(dst, batchVersion)
	dst = binary.AppendUvarint(dst, b.Proposer)
	dst = binary.AppendUvarint(dst, b.Seq)
	dst = binary.AppendVarint(dst, b.Time)
	var flags byte
	if b.Control {
		flags |= batchFlagControl
	}
	if b.SessionFence {
		flags |= batchFlagSessionFence
	}
	epochs := false
	for i := range b.Ops {
		if b.Ops[i].Epoch != 0 {
			epochs = true
			break
		}
	}
	if epochs {
		flags |= batchFlagEpochs
	}
	flags |= b.Quota.batchFlags()
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(len(b.Ops)))
	for i := range b.Ops {
		op := &b.Ops[i]
		dst = binary.AppendVarint(dst, op.Session)
		dst = binary.AppendVarint(dst, int64(op.Code))
		dst = binary.AppendVarint(dst, op.MinZxid)
		dst = binary.AppendVarint(dst, op.ViewZxid)
		if epochs {
			dst = binary.AppendUvarint(dst, op.Epoch)
		}
		dst = binary.AppendUvarint(dst, uint64(len(op.Auth)))
		for _, id := range op.Auth {
			dst = appendStr(dst, id.Scheme)
			dst = appendStr(dst, id.ID)
		}
		dst = appendBytes(dst, op.Body)
	}
	return dst
}

// DecodeBatch decodes a batch. Op bodies alias data; everything else is copied. It never panics
// and rejects trailing bytes.
func DecodeBatch(data []byte) (Batch, error) {
	r := reader{buf: data}
	var b Batch
	v := r.byte()
	if v < 1 || v > batchVersion {
		return Batch{}, fmt.Errorf("%w: version %d", ErrMalformedBatch, v)
	}
	b.Proposer = r.uvarint()
	b.Seq = r.uvarint()
	b.Time = r.varint()
	epochs := false
	if v >= 2 {
		flags := r.byte()
		if flags&^(batchFlagControl|batchFlagSessionFence|batchFlagEpochs|batchFlagQuotaCount|batchFlagQuotaEnforce) != 0 {
			r.fail("flags")
		}
		var ok bool
		if b.Quota, ok = quotaFromFlags(flags); !ok {
			r.fail("quota flags")
		}
		b.Control = flags&batchFlagControl != 0
		b.SessionFence = flags&batchFlagSessionFence != 0
		epochs = flags&batchFlagEpochs != 0
	}
	n := r.count(5) // an op takes at least 5 bytes
	if n > 0 {
		b.Ops = make([]Op, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		op := &b.Ops[i]
		op.Session = r.varint()
		op.Code = wire.OpCode(r.int32())
		op.MinZxid = r.varint()
		op.ViewZxid = op.MinZxid
		if v >= 3 {
			op.ViewZxid = r.varint()
		}
		if epochs {
			op.Epoch = r.uvarint()
		}
		if na := r.count(2); na > 0 {
			op.Auth = make([]wire.ID, na)
			for j := range op.Auth {
				op.Auth[j] = wire.ID{Scheme: r.str(), ID: r.str()}
			}
		}
		op.Body = r.bytes()
	}
	if err := r.finish(); err != nil {
		return Batch{}, fmt.Errorf("%w: %v", ErrMalformedBatch, err)
	}
	return b, nil
}

// AppendTo appends the encoding of the result to dst, which grows at most once.
func (res *BatchResult) AppendTo(dst []byte) []byte {
	size := 2 + binary.MaxVarintLen64
	for i := range res.Results {
		size += 3*binary.MaxVarintLen64 + len(res.Results[i].Body)
	}
	dst = slices.Grow(dst, size)
	dst = append(dst, resultVersion, byte(res.Status))
	dst = binary.AppendUvarint(dst, uint64(len(res.Results)))
	for i := range res.Results {
		o := &res.Results[i]
		dst = binary.AppendVarint(dst, int64(o.Err))
		dst = binary.AppendVarint(dst, o.Zxid)
		dst = appendBytes(dst, o.Body)
	}
	return dst
}

// DecodeBatchResult decodes a batch result. Bodies alias data. It never panics and rejects
// trailing bytes.
func DecodeBatchResult(data []byte) (BatchResult, error) {
	r := reader{buf: data}
	var res BatchResult
	if v := r.byte(); v != resultVersion && v != 1 {
		return BatchResult{}, fmt.Errorf("%w: version %d", ErrMalformedResult, v)
	}
	res.Status = BatchStatus(r.byte())
	if r.err == nil && (res.Status < BatchApplied || res.Status > BatchBlocked) {
		return BatchResult{}, fmt.Errorf("%w: status %d", ErrMalformedResult, res.Status)
	}
	n := r.count(3)
	if n > 0 {
		res.Results = make([]OpResult, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		o := &res.Results[i]
		o.Err = wire.Err(r.int32())
		o.Zxid = r.varint()
		o.Body = r.bytes()
	}
	if err := r.finish(); err != nil {
		return BatchResult{}, fmt.Errorf("%w: %v", ErrMalformedResult, err)
	}
	return res, nil
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendBytes(dst []byte, b []byte) []byte {
	if b == nil {
		return append(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(b))+1)
	return append(dst, b...)
}

// reader decodes the varint formats of this package with a sticky error.
type reader struct {
	buf []byte
	off int
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("bad %s at offset %d of %d", what, r.off, len(r.buf))
	}
}

func (r *reader) byte() byte {
	if r.err != nil || r.off >= len(r.buf) {
		r.fail("byte")
		return 0
	}
	b := r.buf[r.off]
	r.off++
	return b
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.buf[r.off:])
	if n <= 0 {
		r.fail("uvarint")
		return 0
	}
	r.off += n
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.buf[r.off:])
	if n <= 0 {
		r.fail("varint")
		return 0
	}
	r.off += n
	return v
}

func (r *reader) int32() int32 {
	v := r.varint()
	if v != int64(int32(v)) {
		r.fail("int32")
		return 0
	}
	return int32(v)
}

// count reads an element count and checks that minSize bytes per element remain.
func (r *reader) count(minSize int) int {
	v := r.uvarint()
	if r.err != nil {
		return 0
	}
	if v > uint64(len(r.buf)-r.off)/uint64(minSize) {
		r.fail("count")
		return 0
	}
	return int(v)
}

// nilCount reads a nil-preserving element count (0 for nil, else count+1) and checks that
// minSize bytes per element remain; it returns -1 for nil.
func (r *reader) nilCount(minSize int) int {
	v := r.uvarint()
	if r.err != nil || v == 0 {
		return -1
	}
	if v-1 > uint64(len(r.buf)-r.off)/uint64(minSize) {
		r.fail("count")
		return -1
	}
	return int(v - 1)
}

// bool reads a strict boolean byte (0 or 1).
func (r *reader) bool() bool {
	b := r.byte()
	if b > 1 {
		r.fail("boolean")
	}
	return b == 1
}

func (r *reader) take(n uint64, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.buf)-r.off) {
		r.fail(what)
		return nil
	}
	b := r.buf[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return b
}

func (r *reader) str() string {
	return string(r.take(r.uvarint(), "string"))
}

// bytes reads a nil-preserving byte string; the result aliases the input.
func (r *reader) bytes() []byte {
	v := r.uvarint()
	if r.err != nil || v == 0 {
		return nil
	}
	return r.take(v-1, "bytes")
}

func (r *reader) finish() error {
	if r.err == nil && r.off != len(r.buf) {
		r.fail("trailing bytes")
	}
	return r.err
}
