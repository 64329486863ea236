package raftnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"time"
)

// Dragonboat's TCP framing (learned from its internal/transport/tcp.go; the bytes must match it
// for servers of either transport to interoperate):
//
//	magic   2 bytes  0xAE 0x7D (0x00 0x00 is the "poison" that closes a snapshot stream)
//	method  2 bytes  big-endian: 100 a Raft message batch, 200 a snapshot chunk
//	size    8 bytes  big-endian payload length, > 0
//	hcrc    4 bytes  CRC-32 (IEEE) of these 18 header bytes with hcrc itself zero
//	pcrc    4 bytes  CRC-32 (IEEE) of the payload; zero when the link is TLS
//	payload size bytes: a marshalled raftpb.MessageBatch or raftpb.Chunk
//
// The receiver of a snapshot stream answers the poison with the poison; nothing else is ever
// sent back on a connection.
const (
	headerSize   = 18
	prefixSize   = 2 + headerSize
	methodBatch  = uint16(100)
	methodChunk  = uint16(200)
	maxFrameSize = 1 << 30 // far above dragonboat's largest batch (64 MB) and chunk (2 MB)
)

var (
	magic  = [2]byte{0xAE, 0x7D}
	poison = [2]byte{0, 0}

	errBadFrame = errors.New("raftnet: malformed frame")
	errPoison   = errors.New("raftnet: end of snapshot stream")
)

// putPrefix writes the magic number and the header of a frame carrying payload into p.
func putPrefix(p *[prefixSize]byte, method uint16, payload []byte, tls bool) {
	p[0], p[1] = magic[0], magic[1]
	h := p[2:]
	binary.BigEndian.PutUint16(h[0:], method)
	binary.BigEndian.PutUint64(h[2:], uint64(len(payload)))
	binary.BigEndian.PutUint32(h[10:], 0)
	var pcrc uint32
	if !tls {
		pcrc = crc32.ChecksumIEEE(payload)
	}
	binary.BigEndian.PutUint32(h[14:], pcrc)
	binary.BigEndian.PutUint32(h[10:], crc32.ChecksumIEEE(h[:headerSize]))
}

// parseHeader checks a frame's 18 header bytes and returns its method, payload size and
// payload checksum. It leaves h as it found it.
func parseHeader(h []byte) (method uint16, size uint64, pcrc uint32, err error) {
	got := binary.BigEndian.Uint32(h[10:])
	binary.BigEndian.PutUint32(h[10:], 0)
	want := crc32.ChecksumIEEE(h[:headerSize])
	binary.BigEndian.PutUint32(h[10:], got)
	if got != want {
		return 0, 0, 0, fmt.Errorf("%w: header checksum", errBadFrame)
	}
	method = binary.BigEndian.Uint16(h[0:])
	size = binary.BigEndian.Uint64(h[2:])
	if method != methodBatch && method != methodChunk {
		return 0, 0, 0, fmt.Errorf("%w: method %d", errBadFrame, method)
	}
	if size == 0 || size > maxFrameSize {
		return 0, 0, 0, fmt.Errorf("%w: payload size %d", errBadFrame, size)
	}
	return method, size, binary.BigEndian.Uint32(h[14:]), nil
}

// writeFrame sends one frame. Its deadline grows with the payload: writeGrace plus one second
// per MiB, so a large batch on a busy link is not cut off while a stuck peer still is.
func writeFrame(nc net.Conn, method uint16, payload []byte, tls bool) error {
	var p [prefixSize]byte
	putPrefix(&p, method, payload, tls)
	d := writeGrace + time.Duration(len(payload)>>20)*time.Second
	if err := nc.SetWriteDeadline(time.Now().Add(d)); err != nil {
		return err
	}
	bufs := net.Buffers{p[:], payload}
	_, err := bufs.WriteTo(nc)
	return err
}

// readFrame waits, without a deadline, for the next frame's magic number, then reads the rest
// of the frame within readGrace (plus a second per MiB) and checks it. It reads through r, a
// buffered reader of nc (so a frame, or several that arrived together, costs one read system
// call instead of three), and sets the deadlines on nc. buf is reused when the payload fits.
// It returns errPoison for the poison.
func readFrame(nc net.Conn, r io.Reader, buf []byte, tls bool) (method uint16, payload []byte, err error) {
	var p [prefixSize]byte
	if err := nc.SetReadDeadline(time.Time{}); err != nil {
		return 0, nil, err
	}
	if _, err := io.ReadFull(r, p[:2]); err != nil {
		return 0, nil, err
	}
	if p[0] == poison[0] && p[1] == poison[1] {
		return 0, nil, errPoison
	}
	if p[0] != magic[0] || p[1] != magic[1] {
		return 0, nil, fmt.Errorf("%w: magic %#x %#x", errBadFrame, p[0], p[1])
	}
	if err := nc.SetReadDeadline(time.Now().Add(readGrace)); err != nil {
		return 0, nil, err
	}
	if _, err := io.ReadFull(r, p[2:]); err != nil {
		return 0, nil, err
	}
	method, size, pcrc, err := parseHeader(p[2:])
	if err != nil {
		return 0, nil, err
	}
	if uint64(cap(buf)) >= size {
		payload = buf[:size]
	} else {
		payload = make([]byte, size)
	}
	if err := nc.SetReadDeadline(time.Now().Add(readGrace + time.Duration(size>>20)*time.Second)); err != nil {
		return 0, nil, err
	}
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, err
	}
	if !tls && crc32.ChecksumIEEE(payload) != pcrc {
		return 0, nil, fmt.Errorf("%w: payload checksum", errBadFrame)
	}
	return method, payload, nil
}
