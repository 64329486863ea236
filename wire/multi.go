package wire

import (
	"errors"
	"fmt"
)

// ErrBadMulti is returned (wrapped) for a multi holding an unknown op type or mixing write and read
// ops; ZooKeeper answers such a request with MARSHALLINGERROR.
var ErrBadMulti = errors.New("wire: invalid multi")

// MultiHeader precedes each op of a multi request and each result of a multi response.
type MultiHeader struct {
	Type OpCode
	Done bool
	Err  Err
}

// Encode appends the record.
func (h *MultiHeader) Encode(e *Encoder) {
	e.Int32(int32(h.Type))
	e.Bool(h.Done)
	e.Int32(int32(h.Err))
}

// Decode reads the record.
func (h *MultiHeader) Decode(d *Decoder) error {
	h.Type = OpCode(d.Int32())
	h.Done = d.Bool()
	h.Err = Err(d.Int32())
	return d.Err()
}

// multiEnd is the header that terminates a multi request or response.
var multiEnd = MultiHeader{Type: -1, Done: true, Err: -1}

// Op kinds inside a multi (ZooKeeper's Op.OpKind).
const (
	kindUnknown = iota
	kindWrite
	kindRead
)

func opKind(op OpCode) int {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpDelete, OpSetData, OpCheck:
		return kindWrite
	case OpGetData, OpGetChildren:
		return kindRead
	}
	return kindUnknown
}

// MultiOp is one op of a multi request. Exactly one record pointer is set, chosen by Op: Create for
// create, create2 and createContainer; CreateTTL for createTTL; then Delete, SetData, Check,
// GetChildren and GetData. MultiRequest.Encode writes a zero record if the pointer for Op is nil.
type MultiOp struct {
	Op          OpCode
	Create      *CreateRequest
	CreateTTL   *CreateTTLRequest
	Delete      *DeleteRequest
	SetData     *SetDataRequest
	Check       *CheckVersionRequest
	GetChildren *GetChildrenRequest
	GetData     *GetDataRequest
}

// orZero returns p, or a zero T if p is nil.
func orZero[T any](p *T) *T {
	if p == nil {
		return new(T)
	}
	return p
}

// encode appends the op's MultiHeader and request record; an op type that is not allowed in a multi
// gets no record (the peer will reject it).
func (m *MultiOp) encode(e *Encoder) {
	h := MultiHeader{Type: m.Op, Err: -1}
	h.Encode(e)
	switch m.Op {
	case OpCreate, OpCreate2, OpCreateContainer:
		orZero(m.Create).Encode(e)
	case OpCreateTTL:
		orZero(m.CreateTTL).Encode(e)
	case OpDelete:
		orZero(m.Delete).Encode(e)
	case OpSetData:
		orZero(m.SetData).Encode(e)
	case OpCheck:
		orZero(m.Check).Encode(e)
	case OpGetChildren:
		orZero(m.GetChildren).Encode(e)
	case OpGetData:
		orZero(m.GetData).Encode(e)
	}
}

// decodeBody reads the request record for m.Op (the header has already been read).
func (m *MultiOp) decodeBody(d *Decoder) {
	switch m.Op {
	case OpCreate, OpCreate2, OpCreateContainer:
		m.Create = new(CreateRequest)
		m.Create.Decode(d)
	case OpCreateTTL:
		m.CreateTTL = new(CreateTTLRequest)
		m.CreateTTL.Decode(d)
	case OpDelete:
		m.Delete = new(DeleteRequest)
		m.Delete.Decode(d)
	case OpSetData:
		m.SetData = new(SetDataRequest)
		m.SetData.Decode(d)
	case OpCheck:
		m.Check = new(CheckVersionRequest)
		m.Check.Decode(d)
	case OpGetChildren:
		m.GetChildren = new(GetChildrenRequest)
		m.GetChildren.Decode(d)
	case OpGetData:
		m.GetData = new(GetDataRequest)
		m.GetData.Decode(d)
	default:
		d.setErr(fmt.Errorf("%w: op type %d", ErrBadMulti, m.Op))
	}
}

// MultiRequest is the request of multi and multiRead (ZooKeeper's MultiOperationRecord).
type MultiRequest struct {
	Ops []MultiOp
}

// Encode appends each op and the terminating header.
func (m *MultiRequest) Encode(e *Encoder) {
	for i := range m.Ops {
		m.Ops[i].encode(e)
	}
	multiEnd.Encode(e)
}

// Decode reads ops until a header with Done set, as ZooKeeper does (the terminator's type and err
// are not checked). An empty multi decodes as nil Ops. Ops are appended as they are read, so memory
// grows with the bytes consumed (at least 9 per op), never with a claimed count.
func (m *MultiRequest) Decode(d *Decoder) error {
	m.Ops = nil
	kind := kindUnknown
	var h MultiHeader
	for h.Decode(d) == nil && !h.Done {
		k := opKind(h.Type)
		if k == kindUnknown {
			d.setErr(fmt.Errorf("%w: op type %d", ErrBadMulti, h.Type))
			break
		}
		if kind != kindUnknown && k != kind {
			d.setErr(fmt.Errorf("%w: mixes read and write ops (op type %d)", ErrBadMulti, h.Type))
			break
		}
		kind = k
		op := MultiOp{Op: h.Type}
		if op.decodeBody(d); d.Err() != nil {
			break
		}
		m.Ops = append(m.Ops, op)
	}
	return d.Err()
}

// ReadOnly reports whether the multi holds only read ops (getData, getChildren), i.e. is a
// multiRead; an empty multi is a write multi.
func (m *MultiRequest) ReadOnly() bool {
	for i := range m.Ops {
		if opKind(m.Ops[i].Op) != kindRead {
			return false
		}
	}
	return len(m.Ops) > 0
}

// MultiResult is one result of a multi response. Op selects which fields are on the wire:
// OpCreate: Path; OpCreate2: Path, Stat; OpDelete, OpCheck: none; OpSetData: Stat;
// OpGetChildren: Children; OpGetData: Data, Stat; OpError: Err.
type MultiResult struct {
	Op       OpCode
	Err      Err
	Path     string
	Stat     Stat
	Data     []byte
	Children []string
}

// encode appends the result's MultiHeader{Op, false, Err} and body. createTTL and createContainer
// results are sent as create2, as ZooKeeper does (clients know no other create result types); other
// types outside the list above get no body.
func (r *MultiResult) encode(e *Encoder) {
	op := r.Op
	if op == OpCreateTTL || op == OpCreateContainer {
		op = OpCreate2
	}
	h := MultiHeader{Type: op, Err: r.Err}
	h.Encode(e)
	switch op {
	case OpCreate:
		e.String(r.Path)
	case OpCreate2:
		e.String(r.Path)
		r.Stat.Encode(e)
	case OpSetData:
		r.Stat.Encode(e)
	case OpGetChildren:
		e.Strings(r.Children)
	case OpGetData:
		e.Buffer(r.Data)
		r.Stat.Encode(e)
	case OpError:
		e.Int32(int32(r.Err))
	}
}

// decodeBody reads the body for r.Op (the header has already been read into r.Op and r.Err).
func (r *MultiResult) decodeBody(d *Decoder) {
	switch r.Op {
	case OpCreate:
		r.Path = d.String()
	case OpCreate2:
		r.Path = d.String()
		r.Stat.Decode(d)
	case OpDelete, OpCheck:
	case OpSetData:
		r.Stat.Decode(d)
	case OpGetChildren:
		r.Children = d.Strings()
	case OpGetData:
		r.Data = d.Buffer()
		r.Stat.Decode(d)
	case OpError:
		r.Err = Err(d.Int32()) // ZooKeeper takes the code from the body
	default:
		d.setErr(fmt.Errorf("%w: result type %d", ErrBadMulti, r.Op))
	}
}

// MultiResponse is the reply to multi and multiRead; its ReplyHeader err is 0 even when an op
// failed (see §1.5 of the protocol reference).
type MultiResponse struct {
	Results []MultiResult
}

// Encode appends each result (MultiHeader{Op, false, Err} and its body) and the terminating header;
// createTTL and createContainer results go out as create2, as in ZooKeeper.
func (m *MultiResponse) Encode(e *Encoder) {
	for i := range m.Results {
		m.Results[i].encode(e)
	}
	multiEnd.Encode(e)
}

// Decode reads results until a header with Done set; an empty response decodes as nil Results.
func (m *MultiResponse) Decode(d *Decoder) error {
	m.Results = nil
	var h MultiHeader
	for h.Decode(d) == nil && !h.Done {
		r := MultiResult{Op: h.Type, Err: h.Err}
		if r.decodeBody(d); d.Err() != nil {
			break
		}
		m.Results = append(m.Results, r)
	}
	return d.Err()
}
