package wire

// Handshake sizes (ClickHouse's CLIENT_/SERVER_HANDSHAKE_LENGTH{,_WITH_READONLY}).
const (
	ConnectRequestSize          = 44
	ConnectRequestSizeReadOnly  = 45
	ConnectResponseSize         = 36
	ConnectResponseSizeReadOnly = 37
)

// ConnectRequest is the first frame a client sends; it has no RequestHeader. The trailing readOnly
// byte is not part of the 3.8 jute record: Decode sets HasReadOnly when at least one byte follows
// Passwd (ZooKeeper reads one boolean and ignores anything after it), and Encode writes the byte
// only when HasReadOnly is set.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

// Encode appends the record.
func (r *ConnectRequest) Encode(e *Encoder) {
	e.Int32(r.ProtocolVersion)
	e.Int64(r.LastZxidSeen)
	e.Int32(r.TimeOut)
	e.Int64(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// Decode reads the record.
func (r *ConnectRequest) Decode(d *Decoder) error {
	r.ProtocolVersion = d.Int32()
	r.LastZxidSeen = d.Int64()
	r.TimeOut = d.Int32()
	r.SessionID = d.Int64()
	r.Passwd = d.Buffer()
	r.ReadOnly, r.HasReadOnly = decodeTrailingBool(d)
	return d.Err()
}

// ConnectResponse is the server's reply to a ConnectRequest; it has no ReplyHeader. The trailing
// readOnly byte is handled as in ConnectRequest: ZooKeeper sends it only if the client sent one.
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

// Encode appends the record.
func (r *ConnectResponse) Encode(e *Encoder) {
	e.Int32(r.ProtocolVersion)
	e.Int32(r.TimeOut)
	e.Int64(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// Decode reads the record.
func (r *ConnectResponse) Decode(d *Decoder) error {
	r.ProtocolVersion = d.Int32()
	r.TimeOut = d.Int32()
	r.SessionID = d.Int64()
	r.Passwd = d.Buffer()
	r.ReadOnly, r.HasReadOnly = decodeTrailingBool(d)
	return d.Err()
}

// decodeTrailingBool reads an optional boolean: (value, true) if a byte remains, else (false, false).
func decodeTrailingBool(d *Decoder) (v, ok bool) {
	if d.Err() != nil || d.Remaining() < 1 {
		return false, false
	}
	return d.Bool(), true
}
