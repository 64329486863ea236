package wire

import (
	"errors"
	"fmt"
	"sync"
)

// ErrUnknownOp is returned (wrapped) by DecodeRequest for an opcode that has no client request
// record; ZooKeeper answers it with UNIMPLEMENTED and closes the connection.
var ErrUnknownOp = errors.New("wire: unknown opcode")

// NewRequest returns a new zero request record for op, or nil if op has none (including ping,
// closeSession and whoAmI, whose bodies are empty).
func NewRequest(op OpCode) Record {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return new(CreateRequest)
	case OpCreateTTL:
		return new(CreateTTLRequest)
	case OpDelete:
		return new(DeleteRequest)
	case OpExists:
		return new(ExistsRequest)
	case OpGetData:
		return new(GetDataRequest)
	case OpSetData:
		return new(SetDataRequest)
	case OpGetACL:
		return new(GetACLRequest)
	case OpSetACL:
		return new(SetACLRequest)
	case OpGetChildren, OpGetChildren2:
		return new(GetChildrenRequest)
	case OpSync:
		return new(SyncRequest)
	case OpCheck:
		return new(CheckVersionRequest)
	case OpMulti, OpMultiRead:
		return new(MultiRequest)
	case OpReconfig:
		return new(ReconfigRequest)
	case OpCheckWatches:
		return new(CheckWatchesRequest)
	case OpRemoveWatches:
		return new(RemoveWatchesRequest)
	case OpAuth:
		return new(AuthPacket)
	case OpSetWatches:
		return new(SetWatches)
	case OpSASL:
		return new(GetSASLRequest)
	case OpGetEphemerals:
		return new(GetEphemeralsRequest)
	case OpGetAllChildrenNumber:
		return new(GetAllChildrenNumberRequest)
	case OpSetWatches2:
		return new(SetWatches2)
	case OpAddWatch:
		return new(AddWatchRequest)
	}
	return nil
}

// decoderPool holds Decoders for DecodeRequest (one passed to an interface method would escape).
var decoderPool = sync.Pool{New: func() any { return new(Decoder) }}

// DecodeRequest decodes the body that follows a RequestHeader of type op and returns a pointer to
// the request record (*CreateRequest for create, create2 and createContainer, *GetChildrenRequest for
// getChildren and getChildren2, *MultiRequest for multi and multiRead, and so on).
//
// Ping, closeSession and whoAmI have empty bodies: they yield (nil, nil). An opcode without a client
// request record (notification, deleteContainer, createSession, error, anything unknown) yields an
// error wrapping ErrUnknownOp. A short or malformed body yields ErrMalformed; a multi with an
// unknown or mixed op type, a multi of reads or a multiRead of writes yields ErrBadMulti.
//
// Bytes left after the record are ignored, as ZooKeeper does (it deserialises the record from the
// frame and never checks that the frame was used up); being stricter would reject requests that
// ZooKeeper accepts.
func DecodeRequest(op OpCode, body []byte) (Record, error) {
	switch op {
	case OpPing, OpCloseSession, OpWhoAmI:
		return nil, nil
	}
	r := NewRequest(op)
	if r == nil {
		return nil, fmt.Errorf("%w: %d", ErrUnknownOp, op)
	}
	d := decoderPool.Get().(*Decoder)
	d.Reset(body)
	err := r.Decode(d)
	d.Reset(nil)
	decoderPool.Put(d)
	if err != nil {
		return nil, err
	}
	if m, ok := r.(*MultiRequest); ok && len(m.Ops) > 0 && m.ReadOnly() != (op == OpMultiRead) {
		return nil, fmt.Errorf("%w: opcode %d with op type %d", ErrBadMulti, op, m.Ops[0].Op)
	}
	return r, nil
}
