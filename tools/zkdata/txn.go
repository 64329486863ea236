package zkdata

import (
	"fmt"

	"github.com/corral/corral/wire"
)

// txnHeaderSize is the encoded size of a TxnHeader: clientId, cxid, zxid, time, type.
const txnHeaderSize = 8 + 4 + 8 + 8 + 4

// txnHeader is ZooKeeper's TxnHeader.
type txnHeader struct {
	clientID int64
	cxid     int32
	zxid     int64
	time     int64
	typ      wire.OpCode
}

// txn is one decoded transaction record, or a sub-transaction of a multi. Which fields are set
// depends on typ (zookeeper.jute, module org.apache.zookeeper.txn):
//
//	create, create2          CreateTxn: path, data, acl, ephemeral, parentCVersion
//	                         (CreateTxnV0, without parentCVersion, reads as -1)
//	createContainer          CreateContainerTxn: path, data, acl, parentCVersion
//	createTTL                CreateTTLTxn: path, data, acl, parentCVersion, ttl
//	delete, deleteContainer  DeleteTxn: path
//	setData, reconfig        SetDataTxn: path, data, version
//	setACL                   SetACLTxn: path, acl, version
//	check                    CheckVersionTxn: path, version
//	createSession            CreateSessionTxn: timeout
//	closeSession             CloseSessionTxn: paths; legacy when the body is missing
//	error                    ErrorTxn: err
//	multi                    MultiTxn: subs
type txn struct {
	typ            wire.OpCode
	path           string
	data           []byte
	acl            []wire.ACL
	ephemeral      bool
	parentCVersion int32
	ttl            int64
	version        int32
	timeout        int32
	err            int32
	paths          []string
	legacy         bool
	subs           []txn
}

// txnDigest is the TxnDigest that ZooKeeper 3.6+ appends to a logged transaction.
type txnDigest struct {
	version int32
	tree    int64
}

// entry is a decoded log entry.
type entry struct {
	hdr       txnHeader
	txn       txn
	digest    txnDigest
	hasDigest bool
}

// decodeEntry decodes a log entry's bytes (TxnHeader, the record its type calls for, an optional
// TxnDigest) as SerializeUtils.deserializeTxn does: a create too short for CreateTxn is read as
// CreateTxnV0, a closeSession too short for CloseSessionTxn as one without a body (ZooKeeper
// before 3.6), and a digest is read when at least its 12 bytes follow the record. Data and ACL
// slices alias b. Errors say what was expected; the offsets in them count from the end of the
// TxnHeader.
func decodeEntry(b []byte) (entry, error) {
	var e entry
	d := wire.NewDecoder(b)
	e.hdr.clientID = d.Int64()
	e.hdr.cxid = d.Int32()
	e.hdr.zxid = d.Int64()
	e.hdr.time = d.Int64()
	e.hdr.typ = wire.OpCode(d.Int32())
	if d.Err() != nil {
		return e, fmt.Errorf("expected a %d-byte TxnHeader, the entry has %d bytes", txnHeaderSize, len(b))
	}
	body := d.Rest()
	t, n, err := decodeTxn(e.hdr.typ, body, false)
	if err != nil {
		switch e.hdr.typ {
		case wire.OpCreate:
			var errV0 error
			if t, n, errV0 = decodeCreateV0(body); errV0 != nil {
				return e, fmt.Errorf("zxid %#x: %w", e.hdr.zxid, err)
			}
		case wire.OpCloseSession:
			t, n = txn{typ: wire.OpCloseSession, legacy: true}, 0
		default:
			return e, fmt.Errorf("zxid %#x: %w", e.hdr.zxid, err)
		}
	}
	e.txn = t
	if rest := body[n:]; len(rest) >= 12 {
		d.Reset(rest)
		e.digest.version = d.Int32()
		e.digest.tree = d.Int64()
		e.hasDigest = true
	}
	return e, nil
}

// opName names the transaction types for messages.
func opName(op wire.OpCode) string {
	switch op {
	case wire.OpCreate:
		return "create"
	case wire.OpCreate2:
		return "create2"
	case wire.OpCreateContainer:
		return "createContainer"
	case wire.OpCreateTTL:
		return "createTTL"
	case wire.OpDelete:
		return "delete"
	case wire.OpDeleteContainer:
		return "deleteContainer"
	case wire.OpSetData:
		return "setData"
	case wire.OpReconfig:
		return "reconfig"
	case wire.OpSetACL:
		return "setACL"
	case wire.OpCheck:
		return "check"
	case wire.OpCreateSession:
		return "createSession"
	case wire.OpCloseSession:
		return "closeSession"
	case wire.OpError:
		return "error"
	case wire.OpMulti:
		return "multi"
	}
	return fmt.Sprintf("type %d", op)
}

// decodeTxn decodes the record of a transaction of type typ from b and returns it with the
// number of bytes it took. sub selects the types a multi may hold (DataTree.processTxn).
func decodeTxn(typ wire.OpCode, b []byte, sub bool) (txn, int, error) {
	t := txn{typ: typ}
	d := wire.NewDecoder(b)
	switch typ {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL:
		if sub && typ == wire.OpCreate2 {
			return t, 0, fmt.Errorf("a multi cannot hold a create2")
		}
		t.path = d.String()
		t.data = d.Buffer()
		t.acl = wire.DecodeACLs(d)
		if typ == wire.OpCreate || typ == wire.OpCreate2 {
			t.ephemeral = d.Bool()
		}
		t.parentCVersion = d.Int32()
		if typ == wire.OpCreateTTL {
			t.ttl = d.Int64()
		}
	case wire.OpDelete, wire.OpDeleteContainer:
		t.path = d.String()
	case wire.OpSetData, wire.OpReconfig:
		if sub && typ == wire.OpReconfig {
			return t, 0, fmt.Errorf("a multi cannot hold a reconfig")
		}
		t.path = d.String()
		t.data = d.Buffer()
		t.version = d.Int32()
	case wire.OpCheck:
		t.path = d.String()
		t.version = d.Int32()
	case wire.OpError:
		t.err = d.Int32()
	case wire.OpSetACL, wire.OpCreateSession, wire.OpCloseSession, wire.OpMulti:
		if sub {
			return t, 0, fmt.Errorf("a multi cannot hold a %s", opName(typ))
		}
		switch typ {
		case wire.OpSetACL:
			t.path = d.String()
			t.acl = wire.DecodeACLs(d)
			t.version = d.Int32()
		case wire.OpCreateSession:
			t.timeout = d.Int32()
		case wire.OpCloseSession:
			t.paths = d.Strings()
		case wire.OpMulti:
			return decodeMulti(d)
		}
	default:
		return t, 0, fmt.Errorf("unknown transaction type %d", typ)
	}
	if err := d.Err(); err != nil {
		return t, 0, fmt.Errorf("expected a %s record: %w", opName(typ), err)
	}
	return t, d.Offset(), nil
}

func decodeCreateV0(b []byte) (txn, int, error) {
	t := txn{typ: wire.OpCreate, parentCVersion: -1}
	d := wire.NewDecoder(b)
	t.path = d.String()
	t.data = d.Buffer()
	t.acl = wire.DecodeACLs(d)
	t.ephemeral = d.Bool()
	return t, d.Offset(), d.Err()
}

// decodeMulti decodes a MultiTxn: a vector of (type, buffer) pairs, each buffer the record of a
// sub-transaction.
func decodeMulti(d *wire.Decoder) (txn, int, error) {
	t := txn{typ: wire.OpMulti}
	n := d.VectorLen(8)
	if d.Err() != nil || n < 0 {
		return t, 0, fmt.Errorf("expected a MultiTxn vector length: %v", d.Err())
	}
	t.subs = make([]txn, 0, n)
	for i := 0; i < n; i++ {
		typ := wire.OpCode(d.Int32())
		body := d.Buffer()
		if d.Err() != nil {
			return t, 0, fmt.Errorf("multi sub-transaction %d: %w", i, d.Err())
		}
		if body == nil {
			return t, 0, fmt.Errorf("multi sub-transaction %d (%s): null record", i, opName(typ))
		}
		s, _, err := decodeTxn(typ, body, true)
		if err != nil {
			return t, 0, fmt.Errorf("multi sub-transaction %d: %w", i, err)
		}
		t.subs = append(t.subs, s)
	}
	return t, d.Offset(), nil
}
