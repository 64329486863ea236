package wire

// Record is a jute record: Encode appends it, Decode reads it and returns the decoder's error.
type Record interface {
	Encode(e *Encoder)
	Decode(d *Decoder) error
}

// RequestHeader precedes every request after the handshake.
type RequestHeader struct {
	Xid int32
	Op  OpCode
}

// Encode appends the header.
func (r *RequestHeader) Encode(e *Encoder) { e.Int32(r.Xid); e.Int32(int32(r.Op)) }

// Decode reads the header.
func (r *RequestHeader) Decode(d *Decoder) error {
	r.Xid = d.Int32()
	r.Op = OpCode(d.Int32())
	return d.Err()
}

// ReplyHeader precedes every reply and notification after the handshake.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  Err
}

// ReplyHeaderSize is the encoded size of a ReplyHeader.
const ReplyHeaderSize = 16

// Encode appends the header.
func (r *ReplyHeader) Encode(e *Encoder) { e.Int32(r.Xid); e.Int64(r.Zxid); e.Int32(int32(r.Err)) }

// Decode reads the header.
func (r *ReplyHeader) Decode(d *Decoder) error {
	r.Xid = d.Int32()
	r.Zxid = d.Int64()
	r.Err = Err(d.Int32())
	return d.Err()
}

// CreateRequest is the request of create, create2 and createContainer.
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
}

// Encode appends the record.
func (r *CreateRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	EncodeACLs(e, r.ACL)
	e.Int32(r.Flags)
}

// Decode reads the record.
func (r *CreateRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = DecodeACLs(d)
	r.Flags = d.Int32()
	return d.Err()
}

// CreateTTLRequest is the request of createTTL.
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
	TTL   int64
}

// Encode appends the record.
func (r *CreateTTLRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	EncodeACLs(e, r.ACL)
	e.Int32(r.Flags)
	e.Int64(r.TTL)
}

// Decode reads the record.
func (r *CreateTTLRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = DecodeACLs(d)
	r.Flags = d.Int32()
	r.TTL = d.Int64()
	return d.Err()
}

// CreateResponse is the reply to create.
type CreateResponse struct {
	Path string
}

// Encode appends the record.
func (r *CreateResponse) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads the record.
func (r *CreateResponse) Decode(d *Decoder) error { r.Path = d.String(); return d.Err() }

// Create2Response is the reply to create2, createContainer and createTTL.
type Create2Response struct {
	Path string
	Stat Stat
}

// Encode appends the record.
func (r *Create2Response) Encode(e *Encoder) { e.String(r.Path); r.Stat.Encode(e) }

// Decode reads the record.
func (r *Create2Response) Decode(d *Decoder) error { r.Path = d.String(); return r.Stat.Decode(d) }

// DeleteRequest is the request of delete.
type DeleteRequest struct {
	Path    string
	Version int32
}

// Encode appends the record.
func (r *DeleteRequest) Encode(e *Encoder) { e.String(r.Path); e.Int32(r.Version) }

// Decode reads the record.
func (r *DeleteRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Version = d.Int32()
	return d.Err()
}

// ExistsRequest is the request of exists.
type ExistsRequest struct {
	Path  string
	Watch bool
}

// Encode appends the record.
func (r *ExistsRequest) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode reads the record.
func (r *ExistsRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Watch = d.Bool()
	return d.Err()
}

// ExistsResponse is the reply to exists on an existing node.
type ExistsResponse struct {
	Stat Stat
}

// Encode appends the record.
func (r *ExistsResponse) Encode(e *Encoder) { r.Stat.Encode(e) }

// Decode reads the record.
func (r *ExistsResponse) Decode(d *Decoder) error { return r.Stat.Decode(d) }

// GetDataRequest is the request of getData.
type GetDataRequest struct {
	Path  string
	Watch bool
}

// Encode appends the record.
func (r *GetDataRequest) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode reads the record.
func (r *GetDataRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Watch = d.Bool()
	return d.Err()
}

// GetDataResponse is the reply to getData (and to reconfig).
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

// Encode appends the record.
func (r *GetDataResponse) Encode(e *Encoder) { e.Buffer(r.Data); r.Stat.Encode(e) }

// Decode reads the record.
func (r *GetDataResponse) Decode(d *Decoder) error { r.Data = d.Buffer(); return r.Stat.Decode(d) }

// SetDataRequest is the request of setData.
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

// Encode appends the record.
func (r *SetDataRequest) Encode(e *Encoder) { e.String(r.Path); e.Buffer(r.Data); e.Int32(r.Version) }

// Decode reads the record.
func (r *SetDataRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.Version = d.Int32()
	return d.Err()
}

// SetDataResponse is the reply to setData.
type SetDataResponse struct {
	Stat Stat
}

// Encode appends the record.
func (r *SetDataResponse) Encode(e *Encoder) { r.Stat.Encode(e) }

// Decode reads the record.
func (r *SetDataResponse) Decode(d *Decoder) error { return r.Stat.Decode(d) }

// GetACLRequest is the request of getACL.
type GetACLRequest struct {
	Path string
}

// Encode appends the record.
func (r *GetACLRequest) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads the record.
func (r *GetACLRequest) Decode(d *Decoder) error { r.Path = d.String(); return d.Err() }

// GetACLResponse is the reply to getACL.
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

// Encode appends the record.
func (r *GetACLResponse) Encode(e *Encoder) { EncodeACLs(e, r.ACL); r.Stat.Encode(e) }

// Decode reads the record.
func (r *GetACLResponse) Decode(d *Decoder) error { r.ACL = DecodeACLs(d); return r.Stat.Decode(d) }

// SetACLRequest is the request of setACL.
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

// Encode appends the record.
func (r *SetACLRequest) Encode(e *Encoder) {
	e.String(r.Path)
	EncodeACLs(e, r.ACL)
	e.Int32(r.Version)
}

// Decode reads the record.
func (r *SetACLRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.ACL = DecodeACLs(d)
	r.Version = d.Int32()
	return d.Err()
}

// SetACLResponse is the reply to setACL.
type SetACLResponse struct {
	Stat Stat
}

// Encode appends the record.
func (r *SetACLResponse) Encode(e *Encoder) { r.Stat.Encode(e) }

// Decode reads the record.
func (r *SetACLResponse) Decode(d *Decoder) error { return r.Stat.Decode(d) }

// GetChildrenRequest is the request of getChildren and getChildren2.
type GetChildrenRequest struct {
	Path  string
	Watch bool
}

// Encode appends the record.
func (r *GetChildrenRequest) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode reads the record.
func (r *GetChildrenRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Watch = d.Bool()
	return d.Err()
}

// GetChildrenResponse is the reply to getChildren.
type GetChildrenResponse struct {
	Children []string
}

// Encode appends the record.
func (r *GetChildrenResponse) Encode(e *Encoder) { e.Strings(r.Children) }

// Decode reads the record.
func (r *GetChildrenResponse) Decode(d *Decoder) error { r.Children = d.Strings(); return d.Err() }

// GetChildren2Response is the reply to getChildren2.
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

// Encode appends the record.
func (r *GetChildren2Response) Encode(e *Encoder) { e.Strings(r.Children); r.Stat.Encode(e) }

// Decode reads the record.
func (r *GetChildren2Response) Decode(d *Decoder) error {
	r.Children = d.Strings()
	return r.Stat.Decode(d)
}

// SyncRequest is the request of sync.
type SyncRequest struct {
	Path string
}

// Encode appends the record.
func (r *SyncRequest) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads the record.
func (r *SyncRequest) Decode(d *Decoder) error { r.Path = d.String(); return d.Err() }

// SyncResponse is the reply to sync (the path echoed).
type SyncResponse struct {
	Path string
}

// Encode appends the record.
func (r *SyncResponse) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads the record.
func (r *SyncResponse) Decode(d *Decoder) error { r.Path = d.String(); return d.Err() }

// CheckVersionRequest is the check op (inside multi).
type CheckVersionRequest struct {
	Path    string
	Version int32
}

// Encode appends the record.
func (r *CheckVersionRequest) Encode(e *Encoder) { e.String(r.Path); e.Int32(r.Version) }

// Decode reads the record.
func (r *CheckVersionRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Version = d.Int32()
	return d.Err()
}

// CheckWatchesRequest is the request of checkWatches; Type is a Watcher* constant.
type CheckWatchesRequest struct {
	Path string
	Type int32
}

// Encode appends the record.
func (r *CheckWatchesRequest) Encode(e *Encoder) { e.String(r.Path); e.Int32(r.Type) }

// Decode reads the record.
func (r *CheckWatchesRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Type = d.Int32()
	return d.Err()
}

// RemoveWatchesRequest is the request of removeWatches; Type is a Watcher* constant.
type RemoveWatchesRequest struct {
	Path string
	Type int32
}

// Encode appends the record.
func (r *RemoveWatchesRequest) Encode(e *Encoder) { e.String(r.Path); e.Int32(r.Type) }

// Decode reads the record.
func (r *RemoveWatchesRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Type = d.Int32()
	return d.Err()
}

// GetEphemeralsRequest is the request of getEphemerals.
type GetEphemeralsRequest struct {
	PrefixPath string
}

// Encode appends the record.
func (r *GetEphemeralsRequest) Encode(e *Encoder) { e.String(r.PrefixPath) }

// Decode reads the record.
func (r *GetEphemeralsRequest) Decode(d *Decoder) error { r.PrefixPath = d.String(); return d.Err() }

// GetEphemeralsResponse is the reply to getEphemerals.
type GetEphemeralsResponse struct {
	Ephemerals []string
}

// Encode appends the record.
func (r *GetEphemeralsResponse) Encode(e *Encoder) { e.Strings(r.Ephemerals) }

// Decode reads the record.
func (r *GetEphemeralsResponse) Decode(d *Decoder) error { r.Ephemerals = d.Strings(); return d.Err() }

// GetAllChildrenNumberRequest is the request of getAllChildrenNumber.
type GetAllChildrenNumberRequest struct {
	Path string
}

// Encode appends the record.
func (r *GetAllChildrenNumberRequest) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads the record.
func (r *GetAllChildrenNumberRequest) Decode(d *Decoder) error { r.Path = d.String(); return d.Err() }

// GetAllChildrenNumberResponse is the reply to getAllChildrenNumber.
type GetAllChildrenNumberResponse struct {
	TotalNumber int32
}

// Encode appends the record.
func (r *GetAllChildrenNumberResponse) Encode(e *Encoder) { e.Int32(r.TotalNumber) }

// Decode reads the record.
func (r *GetAllChildrenNumberResponse) Decode(d *Decoder) error {
	r.TotalNumber = d.Int32()
	return d.Err()
}

// SetWatches is the request of setWatches, sent after a reconnect.
type SetWatches struct {
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

// Encode appends the record.
func (r *SetWatches) Encode(e *Encoder) {
	e.Int64(r.RelativeZxid)
	e.Strings(r.DataWatches)
	e.Strings(r.ExistWatches)
	e.Strings(r.ChildWatches)
}

// Decode reads the record.
func (r *SetWatches) Decode(d *Decoder) error {
	r.RelativeZxid = d.Int64()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
	return d.Err()
}

// SetWatches2 is the request of setWatches2, which adds persistent watches.
type SetWatches2 struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// Encode appends the record.
func (r *SetWatches2) Encode(e *Encoder) {
	e.Int64(r.RelativeZxid)
	e.Strings(r.DataWatches)
	e.Strings(r.ExistWatches)
	e.Strings(r.ChildWatches)
	e.Strings(r.PersistentWatches)
	e.Strings(r.PersistentRecursiveWatches)
}

// Decode reads the record.
func (r *SetWatches2) Decode(d *Decoder) error {
	r.RelativeZxid = d.Int64()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
	r.PersistentWatches = d.Strings()
	r.PersistentRecursiveWatches = d.Strings()
	return d.Err()
}

// AddWatchRequest is the request of addWatch; Mode is an AddWatch* constant.
type AddWatchRequest struct {
	Path string
	Mode int32
}

// Encode appends the record.
func (r *AddWatchRequest) Encode(e *Encoder) { e.String(r.Path); e.Int32(r.Mode) }

// Decode reads the record.
func (r *AddWatchRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Mode = d.Int32()
	return d.Err()
}

// ErrorResponse carries an error code: the body of a failed multi result and of addWatch's reply.
type ErrorResponse struct {
	Err Err
}

// Encode appends the record.
func (r *ErrorResponse) Encode(e *Encoder) { e.Int32(int32(r.Err)) }

// Decode reads the record.
func (r *ErrorResponse) Decode(d *Decoder) error { r.Err = Err(d.Int32()); return d.Err() }

// AuthPacket is the request of auth (xid -4).
type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

// Encode appends the record.
func (r *AuthPacket) Encode(e *Encoder) { e.Int32(r.Type); e.String(r.Scheme); e.Buffer(r.Auth) }

// Decode reads the record.
func (r *AuthPacket) Decode(d *Decoder) error {
	r.Type = d.Int32()
	r.Scheme = d.String()
	r.Auth = d.Buffer()
	return d.Err()
}

// ClientInfo is one authenticated identity in a whoAmI reply.
type ClientInfo struct {
	AuthScheme string
	User       string
}

// Encode appends the record.
func (r *ClientInfo) Encode(e *Encoder) { e.String(r.AuthScheme); e.String(r.User) }

// Decode reads the record.
func (r *ClientInfo) Decode(d *Decoder) error {
	r.AuthScheme = d.String()
	r.User = d.String()
	return d.Err()
}

// WhoAmIResponse is the reply to whoAmI.
type WhoAmIResponse struct {
	ClientInfo []ClientInfo
}

// Encode appends the record.
func (r *WhoAmIResponse) Encode(e *Encoder) {
	if r.ClientInfo == nil {
		e.Int32(-1)
		return
	}
	e.Int32(int32(len(r.ClientInfo)))
	for i := range r.ClientInfo {
		r.ClientInfo[i].Encode(e)
	}
}

// Decode reads the record.
func (r *WhoAmIResponse) Decode(d *Decoder) error {
	r.ClientInfo = nil
	if n := d.VectorLen(8); n >= 0 && d.Err() == nil {
		r.ClientInfo = make([]ClientInfo, n)
		for i := range r.ClientInfo {
			r.ClientInfo[i].Decode(d)
		}
	}
	return d.Err()
}

// WatcherEvent is the body of a notification (xid -1).
type WatcherEvent struct {
	Type  EventType
	State int32
	Path  string
}

// Encode appends the record.
func (r *WatcherEvent) Encode(e *Encoder) { e.Int32(int32(r.Type)); e.Int32(r.State); e.String(r.Path) }

// Decode reads the record.
func (r *WatcherEvent) Decode(d *Decoder) error {
	r.Type = EventType(d.Int32())
	r.State = d.Int32()
	r.Path = d.String()
	return d.Err()
}

// ReconfigRequest is the request of reconfig.
type ReconfigRequest struct {
	JoiningServers string
	LeavingServers string
	NewMembers     string
	CurConfigID    int64
}

// Encode appends the record.
func (r *ReconfigRequest) Encode(e *Encoder) {
	e.String(r.JoiningServers)
	e.String(r.LeavingServers)
	e.String(r.NewMembers)
	e.Int64(r.CurConfigID)
}

// Decode reads the record.
func (r *ReconfigRequest) Decode(d *Decoder) error {
	r.JoiningServers = d.String()
	r.LeavingServers = d.String()
	r.NewMembers = d.String()
	r.CurConfigID = d.Int64()
	return d.Err()
}

// GetSASLRequest is the request of sasl.
type GetSASLRequest struct {
	Token []byte
}

// Encode appends the record.
func (r *GetSASLRequest) Encode(e *Encoder) { e.Buffer(r.Token) }

// Decode reads the record.
func (r *GetSASLRequest) Decode(d *Decoder) error { r.Token = d.Buffer(); return d.Err() }

// SetSASLResponse is the reply to sasl.
type SetSASLResponse struct {
	Token []byte
}

// Encode appends the record.
func (r *SetSASLResponse) Encode(e *Encoder) { e.Buffer(r.Token) }

// Decode reads the record.
func (r *SetSASLResponse) Decode(d *Decoder) error { r.Token = d.Buffer(); return d.Err() }
