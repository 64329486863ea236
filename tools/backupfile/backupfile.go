package backupfile

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"strings"

	"github.com/corral/corral/wire"
)

// Magic starts every backup file; Version follows it.
const (
	Magic   = "CORRALBK"
	Version = 1
)

// Record kinds.
const (
	kindHeader  = 'H'
	kindNode    = 'N'
	kindTrailer = 'E'
)

// maxRecord bounds a record's length: a znode's data is at most jute.maxbuffer (far below), so a
// larger length is corruption, not a record to allocate.
const maxRecord = 256 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Header describes a backup.
type Header struct {
	Created int64       `json:"created"` // Unix ms on the server that took the cut
	Server  uint64      `json:"server"`  // its myid
	Format  uint32      `json:"format"`  // the ensemble's format level
	Shards  []ShardInfo `json:"shards"`
}

// ShardInfo is one data shard at the cut.
type ShardInfo struct {
	ID   uint64 `json:"id"`
	Zxid int64  `json:"zxid"` // the shard's last zxid at the cut
}

// Type is a znode's type, as far as a backup keeps it (ephemerals are never backed up).
type Type uint8

// Types.
const (
	Persistent Type = iota
	Container
	TTL
)

// Node is one znode of a backup.
type Node struct {
	Path string
	Data []byte // nil: null data, apart from empty
	Type Type
	TTL  int64 // ms, TTL nodes only
	// The stat fields a restore sets; Cversion is the stored count of child creations
	// (shard.SetStat), not the cversion clients see.
	Czxid, Mzxid, Pzxid int64
	Ctime, Mtime        int64
	Version, Cversion   int32
	Aversion            int32
	ACL                 []wire.ACL
}

// MaxZxid is the largest zxid n carries.
func (n *Node) MaxZxid() int64 { return max(n.Czxid, n.Mzxid, n.Pzxid) }

// Trailer ends a backup.
type Trailer struct {
	Nodes   int64
	MaxZxid int64
	SHA256  [32]byte // of every byte before the trailer record
}

// FormatError is a problem found in a file, at the record that starts at Offset.
type FormatError struct {
	Offset int64
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("backup file: %s (at byte %d)", e.Msg, e.Offset)
}

// ErrTruncated marks a FormatError for a file that ends early.
var ErrTruncated = errors.New("the file ends early: truncated")

// Writer writes a backup file.
type Writer struct {
	w     *bufio.Writer
	sum   hash.Hash
	out   io.Writer // w and sum
	buf   []byte
	nodes int64
	max   int64
	err   error
}

// NewWriter starts a file on w with its header.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	bw := bufio.NewWriterSize(w, 256<<10)
	sum := sha256.New()
	wr := &Writer{w: bw, sum: sum, out: io.MultiWriter(bw, sum)}
	if _, err := io.WriteString(wr.out, Magic+string(rune(Version))); err != nil {
		return nil, err
	}
	js, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	wr.record(kindHeader, js)
	return wr, wr.err
}

// record writes one record (through the checksum).
func (wr *Writer) record(kind byte, payload []byte) {
	if wr.err != nil {
		return
	}
	var head [5]byte
	binary.BigEndian.PutUint32(head[:4], uint32(1+len(payload)))
	head[4] = kind
	crc := crc32.Update(crc32.Update(0, crcTable, head[4:]), crcTable, payload)
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], crc)
	for _, b := range [][]byte{head[:], payload, tail[:]} {
		if _, err := wr.out.Write(b); err != nil {
			wr.err = err
			return
		}
	}
}

// Node writes one znode. Nodes go in key order (a parent before its children).
func (wr *Writer) Node(n *Node) error {
	wr.buf = appendNode(wr.buf[:0], n)
	wr.record(kindNode, wr.buf)
	wr.nodes++
	wr.max = max(wr.max, n.MaxZxid())
	return wr.err
}

// Close writes the trailer and flushes; it does not close the underlying writer.
func (wr *Writer) Close() (Trailer, error) {
	t := Trailer{Nodes: wr.nodes, MaxZxid: wr.max}
	copy(t.SHA256[:], wr.sum.Sum(nil))
	p := binary.AppendUvarint(nil, uint64(t.Nodes))
	p = binary.AppendVarint(p, t.MaxZxid)
	p = append(p, t.SHA256[:]...)
	wr.record(kindTrailer, p)
	if wr.err == nil {
		wr.err = wr.w.Flush()
	}
	return t, wr.err
}

func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendNode encodes a node record's payload:
//
//	str path | u8 has data | (bytes data) | u8 type | varint ttl | varint czxid, mzxid, pzxid,
//	ctime, mtime, version, cversion, aversion | uvarint len(acl) | (varint perms | str scheme | str id)...
func appendNode(b []byte, n *Node) []byte {
	b = appendStr(b, n.Path)
	if n.Data == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = append(binary.AppendUvarint(b, uint64(len(n.Data))), n.Data...)
	}
	b = append(b, byte(n.Type))
	for _, v := range [...]int64{n.TTL, n.Czxid, n.Mzxid, n.Pzxid, n.Ctime, n.Mtime, int64(n.Version),
		int64(n.Cversion), int64(n.Aversion)} {
		b = binary.AppendVarint(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(n.ACL)))
	for _, a := range n.ACL {
		b = binary.AppendVarint(b, int64(a.Perms))
		b = appendStr(b, a.ID.Scheme)
		b = appendStr(b, a.ID.ID)
	}
	return b
}

// payload decodes a record's payload; the first failure sticks.
type payload struct {
	b   []byte
	err string
}

func (p *payload) fail(what string) {
	if p.err == "" {
		p.err = what
	}
}

func (p *payload) uvarint(what string) uint64 {
	v, n := binary.Uvarint(p.b)
	if n <= 0 {
		p.fail(what)
		p.b = nil
		return 0
	}
	p.b = p.b[n:]
	return v
}

func (p *payload) varint(what string) int64 {
	v, n := binary.Varint(p.b)
	if n <= 0 {
		p.fail(what)
		p.b = nil
		return 0
	}
	p.b = p.b[n:]
	return v
}

func (p *payload) int32(what string) int32 {
	v := p.varint(what)
	if int64(int32(v)) != v {
		p.fail(what + " out of range")
	}
	return int32(v)
}

func (p *payload) bytes(what string) []byte {
	n := p.uvarint(what)
	if n > uint64(len(p.b)) {
		p.fail(what)
		p.b = nil
		return nil
	}
	v := p.b[:n:n]
	p.b = p.b[n:]
	return v
}

func (p *payload) byte(what string) byte {
	if len(p.b) == 0 {
		p.fail(what)
		return 0
	}
	v := p.b[0]
	p.b = p.b[1:]
	return v
}

func decodeNode(b []byte) (*Node, string) {
	p := payload{b: b}
	n := &Node{Path: string(p.bytes("path"))}
	switch p.byte("data flag") {
	case 0:
	case 1:
		n.Data = append([]byte{}, p.bytes("data")...)
	default:
		p.fail("data flag")
	}
	n.Type = Type(p.byte("type"))
	if n.Type > TTL {
		p.fail(fmt.Sprintf("unknown znode type %d", n.Type))
	}
	n.TTL = p.varint("ttl")
	n.Czxid, n.Mzxid, n.Pzxid = p.varint("czxid"), p.varint("mzxid"), p.varint("pzxid")
	n.Ctime, n.Mtime = p.varint("ctime"), p.varint("mtime")
	n.Version, n.Cversion, n.Aversion = p.int32("version"), p.int32("cversion"), p.int32("aversion")
	acls := p.uvarint("acl count")
	if acls > uint64(len(p.b)) {
		p.fail("acl count")
	}
	for i := uint64(0); i < acls && p.err == ""; i++ {
		perms := p.int32("acl perms")
		scheme, id := string(p.bytes("acl scheme")), string(p.bytes("acl id"))
		n.ACL = append(n.ACL, wire.ACL{Perms: perms, ID: wire.ID{Scheme: scheme, ID: id}})
	}
	if p.err == "" && len(p.b) != 0 {
		p.fail("trailing bytes")
	}
	if p.err == "" && (!strings.HasPrefix(n.Path, "/") || n.Path != "/" && strings.HasSuffix(n.Path, "/")) {
		p.fail(fmt.Sprintf("path %q", n.Path))
	}
	if p.err != "" {
		return nil, "node record: bad " + p.err
	}
	return n, ""
}

// Reader reads a backup file and checks it as it goes: every record's CRC, the order of the
// records, the node count and the SHA-256 in the trailer. Next returns io.EOF only after a
// trailer that matches what was read.
type Reader struct {
	r       *bufio.Reader
	sum     hash.Hash
	off     int64 // offset of the next record
	header  Header
	trailer Trailer
	nodes   int64
	maxZxid int64
	prev    string // key of the previous node, for the order check
	done    bool
	err     error
}

// NewReader reads the magic and the header.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{r: bufio.NewReaderSize(r, 256<<10), sum: sha256.New()}
	var magic [len(Magic) + 1]byte
	if _, err := io.ReadFull(rd.r, magic[:]); err != nil {
		return nil, rd.fail(0, "no backup file header: "+describe(err))
	}
	rd.sum.Write(magic[:])
	rd.off = int64(len(magic))
	if string(magic[:len(Magic)]) != Magic {
		return nil, rd.fail(0, "not a Corral backup (wrong magic)")
	}
	if magic[len(Magic)] != Version {
		return nil, rd.fail(int64(len(Magic)), fmt.Sprintf("format version %d, this binary reads %d", magic[len(Magic)], Version))
	}
	kind, p, err := rd.record()
	if err != nil {
		return nil, err
	}
	if kind != kindHeader {
		return nil, rd.fail(int64(len(magic)), "the first record is not the header")
	}
	if err := json.Unmarshal(p, &rd.header); err != nil {
		return nil, rd.fail(int64(len(magic)), "header: "+err.Error())
	}
	return rd, nil
}

func describe(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return ErrTruncated.Error()
	}
	return err.Error()
}

func (rd *Reader) fail(off int64, msg string) error {
	rd.err = &FormatError{Offset: off, Msg: msg}
	return rd.err
}

// record reads the next record: its kind and payload (valid until the next call).
func (rd *Reader) record() (byte, []byte, error) {
	start := rd.off
	var head [5]byte
	if _, err := io.ReadFull(rd.r, head[:4]); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, nil, &FormatError{Offset: start, Msg: "the file ends without its trailer: " + ErrTruncated.Error()}
		}
		return 0, nil, rd.fail(start, "record length: "+describe(err))
	}
	n := binary.BigEndian.Uint32(head[:4])
	if n == 0 || n > maxRecord {
		return 0, nil, rd.fail(start, fmt.Sprintf("record length %d: corrupt", n))
	}
	body := make([]byte, n+4)
	if _, err := io.ReadFull(rd.r, body); err != nil {
		return 0, nil, rd.fail(start, fmt.Sprintf("a record of %d bytes: %s", n, describe(err)))
	}
	crc := binary.BigEndian.Uint32(body[n:])
	if crc32.Checksum(body[:n], crcTable) != crc {
		return 0, nil, rd.fail(start, "record checksum mismatch: corrupt")
	}
	if body[0] != kindTrailer {
		rd.sum.Write(head[:4])
		rd.sum.Write(body)
	}
	rd.off += int64(4 + len(body))
	return body[0], body[1:n], nil
}

// Header returns the file's header.
func (rd *Reader) Header() Header { return rd.header }

// Trailer returns the trailer once Next returned io.EOF.
func (rd *Reader) Trailer() Trailer { return rd.trailer }

// Offset is the number of bytes read and checked so far.
func (rd *Reader) Offset() int64 { return rd.off }

// Next returns the next znode, io.EOF after a trailer that matches the file, or a *FormatError.
func (rd *Reader) Next() (*Node, error) {
	if rd.err != nil {
		return nil, rd.err
	}
	if rd.done {
		return nil, io.EOF
	}
	start := rd.off
	kind, p, err := rd.record()
	if err != nil {
		rd.err = err
		return nil, err
	}
	switch kind {
	case kindNode:
		n, bad := decodeNode(p)
		if bad != "" {
			return nil, rd.fail(start, bad)
		}
		key := strings.ReplaceAll(n.Path, "/", "\x01")
		if n.Path == "/" {
			key = ""
		}
		if rd.nodes > 0 && key <= rd.prev {
			return nil, rd.fail(start, fmt.Sprintf("node %s out of order", n.Path))
		}
		rd.prev = key
		rd.nodes++
		rd.maxZxid = max(rd.maxZxid, n.MaxZxid())
		return n, nil
	case kindTrailer:
		return nil, rd.finish(start, p)
	}
	return nil, rd.fail(start, fmt.Sprintf("unknown record kind %q", kind))
}

// finish checks the trailer against what was read, and that nothing follows it.
func (rd *Reader) finish(start int64, b []byte) error {
	p := payload{b: b}
	t := Trailer{Nodes: int64(p.uvarint("node count")), MaxZxid: p.varint("max zxid")}
	if p.err != "" || len(p.b) != len(t.SHA256) {
		return rd.fail(start, "trailer: bad "+p.err)
	}
	copy(t.SHA256[:], p.b)
	switch {
	case t.Nodes != rd.nodes:
		return rd.fail(start, fmt.Sprintf("trailer counts %d znodes, the file holds %d", t.Nodes, rd.nodes))
	case t.MaxZxid != rd.maxZxid:
		return rd.fail(start, fmt.Sprintf("trailer says the largest zxid is %#x, the file holds %#x", t.MaxZxid, rd.maxZxid))
	case [32]byte(rd.sum.Sum(nil)) != t.SHA256:
		return rd.fail(start, "SHA-256 mismatch: corrupt")
	}
	if _, err := rd.r.ReadByte(); err != io.EOF {
		return rd.fail(rd.off, "bytes after the trailer")
	}
	rd.trailer, rd.done = t, true
	return io.EOF
}

// Verify reads a whole file and returns its header and trailer, or the first problem.
func Verify(r io.Reader) (Header, Trailer, error) {
	rd, err := NewReader(r)
	if err != nil {
		return Header{}, Trailer{}, err
	}
	for {
		if _, err := rd.Next(); err == io.EOF {
			return rd.header, rd.trailer, nil
		} else if err != nil {
			return rd.header, Trailer{}, err
		}
	}
}
