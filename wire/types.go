package wire

// Stat is the znode metadata as clients see it (68 bytes on the wire).
type Stat struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64
	Mtime          int64
	Version        int32
	Cversion       int32
	Aversion       int32
	EphemeralOwner int64
	DataLength     int32
	NumChildren    int32
	Pzxid          int64
}

// StatSize is the encoded size of a Stat.
const StatSize = 68

// Encode appends the stat.
func (s *Stat) Encode(e *Encoder) {
	e.Int64(s.Czxid)
	e.Int64(s.Mzxid)
	e.Int64(s.Ctime)
	e.Int64(s.Mtime)
	e.Int32(s.Version)
	e.Int32(s.Cversion)
	e.Int32(s.Aversion)
	e.Int64(s.EphemeralOwner)
	e.Int32(s.DataLength)
	e.Int32(s.NumChildren)
	e.Int64(s.Pzxid)
}

// Decode reads the stat.
func (s *Stat) Decode(d *Decoder) error {
	s.Czxid = d.Int64()
	s.Mzxid = d.Int64()
	s.Ctime = d.Int64()
	s.Mtime = d.Int64()
	s.Version = d.Int32()
	s.Cversion = d.Int32()
	s.Aversion = d.Int32()
	s.EphemeralOwner = d.Int64()
	s.DataLength = d.Int32()
	s.NumChildren = d.Int32()
	s.Pzxid = d.Int64()
	return d.Err()
}

// ID is an authentication identity: a scheme and an id within it.
type ID struct {
	Scheme string
	ID     string
}

// Encode appends the id.
func (i *ID) Encode(e *Encoder) {
	e.String(i.Scheme)
	e.String(i.ID)
}

// Decode reads the id.
func (i *ID) Decode(d *Decoder) error {
	i.Scheme = d.String()
	i.ID = d.String()
	return d.Err()
}

// ACL grants Perms to the identities matching ID.
type ACL struct {
	Perms int32
	ID    ID
}

// Encode appends the ACL entry.
func (a *ACL) Encode(e *Encoder) {
	e.Int32(a.Perms)
	a.ID.Encode(e)
}

// Decode reads the ACL entry.
func (a *ACL) Decode(d *Decoder) error {
	a.Perms = d.Int32()
	return a.ID.Decode(d)
}

// EncodeACLs appends a vector of ACL entries (nil encodes as a null vector).
func EncodeACLs(e *Encoder, acls []ACL) {
	if acls == nil {
		e.Int32(-1)
		return
	}
	e.Int32(int32(len(acls)))
	for i := range acls {
		acls[i].Encode(e)
	}
}

// DecodeACLs reads a vector of ACL entries; a null vector decodes as nil.
func DecodeACLs(d *Decoder) []ACL {
	n := d.VectorLen(12)
	if n < 0 {
		return nil
	}
	out := make([]ACL, n)
	for i := range out {
		out[i].Decode(d)
	}
	return out
}

// Well-known ACLs (ZooDefs.Ids).
var (
	AnyoneID      = ID{Scheme: "world", ID: "anyone"}
	AuthIDs       = ID{Scheme: "auth", ID: ""}
	OpenACLUnsafe = []ACL{{Perms: PermAll, ID: AnyoneID}}
	ReadACLUnsafe = []ACL{{Perms: PermRead, ID: AnyoneID}}
	CreatorAllACL = []ACL{{Perms: PermAll, ID: AuthIDs}}
)
