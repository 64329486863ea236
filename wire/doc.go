// Package wire owns ZooKeeper's client wire protocol (jute encoding, ZooKeeper 3.8 feature level):
// the length-prefixed framing, the primitive encodings (big-endian integers, -1 length for null
// strings, buffers and vectors), every request and response record of the client protocol, the
// connect handshake with its optional trailing readOnly byte, the request and reply headers with
// their special xids, the error, opcode, event and permission constants, and the four-letter-word
// detection on a fresh connection.
//
// Invariants:
//
//   - Decoding never panics on any input: a short or malformed buffer yields ErrMalformed (wrapped
//     with what was being read); every decoder has a native fuzz target with a checked-in corpus.
//
//   - Null and empty are distinct for buffers: a nil []byte encodes as length -1, a non-nil empty
//     one as length 0, and decoding preserves the distinction.
//
//   - No length read from the wire is trusted: a vector count or buffer length larger than the
//     bytes that remain is rejected before anything is allocated.
//
//   - Decoded buffers alias the input (copy them if the input is reused); decoded strings are
//     copies, and a null ustring decodes as "". Bytes left after a request record are ignored, as
//     ZooKeeper ignores them (DecodeRequest).
//
// Each record is a struct with Encode(*Encoder) and Decode(*Decoder) error (the Record interface),
// fields in zookeeper.jute declaration order. DecodeRequest maps an opcode and body to its request
// record; AppendReply and AppendEvent build whole reply frames without allocating; MultiRequest and
// MultiResponse carry ZooKeeper's multi encoding and reject what ZooKeeper rejects (ErrBadMulti).
//
// The package does no IO of its own beyond the ReadFrame/WriteFrame helpers over a bufio.Reader and
// an io.Writer; the server package owns connections. TestZooKeeperInterop checks the encodings
// against a real ZooKeeper 3.8 when WIRE_ZK_ADDR names one.
package wire
