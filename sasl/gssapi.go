package sasl

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// GSSAPI errors; like the DIGEST-MD5 ones, each fails the client's session.
var (
	// ErrGSSMalformed: a token that does not decode (not a Kerberos V5 GSS-API token, a bad
	// AP-REQ, a wrap token too short or of the wrong kind) or is larger than MaxGSSAPIToken.
	ErrGSSMalformed = errors.New("sasl: malformed GSSAPI token")
	// ErrGSSProtocol: a well-formed token the exchange does not allow at this point.
	ErrGSSProtocol = errors.New("sasl: GSSAPI protocol violation")
	// ErrGSSRejected: a ticket or wrap token that does not verify (a ticket for another
	// service or no key in the keytab, an expired ticket, clock skew, a replayed
	// authenticator, a bad checksum).
	ErrGSSRejected = errors.New("sasl: GSSAPI credentials rejected")
)

// MaxGSSAPIToken bounds a client's GSSAPI token: an AP-REQ with a ticket carrying a large
// authorization-data field (an Active Directory PAC) stays well below it.
const MaxGSSAPIToken = 64 << 10

// gssMaxBuffer is the receive buffer size the server states in its security layer offer:
// Java's SASL default (javax.security.sasl.maxbuffer), which the JDK's GSSAPI server sends
// even when it offers no security layer.
const gssMaxBuffer = 65536

// qopAuth is the security layer bit of "auth" (no integrity, no confidentiality), the only one
// offered.
const qopAuth = 1

// krb5OID is the Kerberos V5 GSS-API mechanism, 1.2.840.113554.1.2.2, DER-encoded.
var krb5OID = []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}

// GSS-API checksum (RFC 4121 4.1.1) flag bits the exchange reads.
const (
	gssChecksumType = 0x8003
	gssFlagMutual   = 2
)

// RFC 4121 wrap token flags.
const (
	wrapSentByAcceptor = 0x01
	wrapSealed         = 0x02
	wrapAcceptorSubkey = 0x04
)

// GSSAPIOptions configure one GSSAPI server exchange.
type GSSAPIOptions struct {
	// Keytab holds the service's keys.
	Keytab *keytab.Keytab
	// Principal is the service principal the client's ticket must be for (its name part,
	// as "zookeeper/host"); nil accepts a ticket for any principal of the keytab (JAAS
	// principal="*").
	Principal *types.PrincipalName
	// ClientAddr is the client's address, checked against a ticket that lists addresses.
	ClientAddr net.IP
	// Replay, when set, refuses an authenticator seen before within the clock skew.
	Replay *ReplayCache
	// MaxClockSkew is the allowed difference between the client's and the server's clocks
	// (default 5 minutes, Kerberos' clockskew).
	MaxClockSkew time.Duration
}

// GSSAPI is the server side of one SASL GSSAPI exchange (RFC 4752 over the Kerberos V5
// GSS-API mechanism, RFC 4121), as the JDK's GSSAPI SASL server runs it for ZooKeeper:
//
//  1. The client's first token is the initial context token carrying its AP-REQ. It is
//     verified against the keytab. When the client asks for mutual authentication the answer
//     is the AP-REP and the client's next token must be empty; otherwise the answer is the
//     security layer offer at once.
//  2. The security layer offer is a wrap token (integrity only, sent by the acceptor) of four
//     octets: the layers offered (1, "auth": no security layer) and the receive buffer size.
//  3. The client's last token is a wrap token of its choice (which must include "auth"), its
//     buffer size and an optional authorization id; it is answered with no token and the
//     exchange is complete. User then names the client principal ("name[/instance]@REALM").
//
// Not safe for concurrent use.
type GSSAPI struct {
	o      GSSAPIOptions
	step   int // 0: expects the AP-REQ; 1: expects the empty token; 2: expects the wrap token; 3: complete; 4: failed
	key    types.EncryptionKey
	sendSq uint64 // the acceptor's sequence number
	user   string
	authz  string
}

// NewGSSAPI starts an exchange.
func NewGSSAPI(o GSSAPIOptions) *GSSAPI {
	if o.MaxClockSkew <= 0 {
		o.MaxClockSkew = 5 * time.Minute
	}
	return &GSSAPI{o: o}
}

// Complete reports whether the client has been authenticated.
func (g *GSSAPI) Complete() bool { return g.step == 3 }

// User returns the client principal once Complete.
func (g *GSSAPI) User() string { return g.user }

// AuthzID returns the authorization id the client asked for (empty when it sent none), once
// Complete. ZooKeeper does not authorise the client as it (see AuthorizationID).
func (g *GSSAPI) AuthzID() string { return g.authz }

// Step consumes the client's token and returns the server's next token (nil at the end).
// Any error ends the exchange.
func (g *GSSAPI) Step(token []byte) (out []byte, err error) {
	defer func() {
		// The ASN.1 decoder is not ours: whatever it does with a hostile token fails this
		// exchange only.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%w: %v", ErrGSSMalformed, r)
		}
		if err != nil {
			g.step = 4
		}
	}()
	if len(token) > MaxGSSAPIToken {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrGSSMalformed, len(token), MaxGSSAPIToken)
	}
	switch g.step {
	case 0:
		return g.accept(token)
	case 1:
		if len(token) != 0 {
			return nil, fmt.Errorf("%w: expected an empty token after the AP-REP, got %d bytes", ErrGSSProtocol, len(token))
		}
		return g.offer()
	case 2:
		return nil, g.finish(token)
	case 3:
		return nil, fmt.Errorf("%w: authentication already complete", ErrGSSProtocol)
	}
	return nil, fmt.Errorf("%w: the exchange has failed", ErrGSSProtocol)
}

// accept verifies the initial context token and returns the AP-REP (mutual authentication)
// or the security layer offer.
func (g *GSSAPI) accept(token []byte) ([]byte, error) {
	inner, err := ParseInitialContextToken(token)
	if err != nil {
		return nil, err
	}
	if len(inner) < 2 || inner[0] != 0x01 || inner[1] != 0x00 {
		return nil, fmt.Errorf("%w: not an AP-REQ token", ErrGSSMalformed)
	}
	var req messages.APReq
	if err := req.Unmarshal(inner[2:]); err != nil {
		return nil, fmt.Errorf("%w: AP-REQ: %v", ErrGSSMalformed, err)
	}
	var addr types.HostAddress
	if g.o.ClientAddr != nil {
		addr = types.HostAddressFromNetIP(g.o.ClientAddr)
	}
	ok, err := req.Verify(g.o.Keytab, g.o.MaxClockSkew, addr, g.o.Principal)
	if err != nil || !ok {
		if err == nil {
			err = errors.New("AP-REQ not valid")
		}
		return nil, fmt.Errorf("%w: %v", ErrGSSRejected, err)
	}
	if g.o.Replay != nil && !g.o.Replay.add(req.Authenticator, g.o.MaxClockSkew) {
		return nil, fmt.Errorf("%w: replayed authenticator", ErrGSSRejected)
	}
	a := req.Authenticator
	mutual := types.IsFlagSet(&req.APOptions, flags.APOptionMutualRequired)
	if a.Cksum.CksumType == gssChecksumType {
		if len(a.Cksum.Checksum) < 24 {
			return nil, fmt.Errorf("%w: GSS-API checksum of %d bytes", ErrGSSMalformed, len(a.Cksum.Checksum))
		}
		if binary.LittleEndian.Uint32(a.Cksum.Checksum[20:24])&gssFlagMutual != 0 {
			mutual = true
		}
	}
	// RFC 4121: without an acceptor subkey, tokens are protected with the initiator's
	// subkey, or the ticket's session key when the authenticator has none.
	g.key = req.Ticket.DecryptedEncPart.Key
	if a.SubKey.KeyType != 0 && len(a.SubKey.KeyValue) > 0 {
		g.key = a.SubKey
	}
	if _, err := crypto.GetEtype(g.key.KeyType); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGSSRejected, err)
	}
	switch g.key.KeyType {
	case etypeID.DES3_CBC_SHA1_KD, etypeID.RC4_HMAC, etypeID.RC4_HMAC_EXP:
		return nil, fmt.Errorf("%w: enctype %d takes RFC 1964 tokens, which are not implemented (use AES)", ErrGSSRejected, g.key.KeyType)
	}
	g.user = a.CName.PrincipalNameString() + "@" + a.CRealm
	if !mutual {
		g.sendSq = uint64(uint32(a.SeqNumber))
		return g.offer()
	}
	var sq [4]byte
	if _, err := rand.Read(sq[:]); err != nil {
		return nil, fmt.Errorf("sasl: sequence number: %w", err)
	}
	g.sendSq = uint64(binary.BigEndian.Uint32(sq[:]) & 0x3fffffff)
	rep, err := apRep(req.Ticket.DecryptedEncPart.Key, a, int64(g.sendSq))
	if err != nil {
		return nil, err
	}
	g.step = 1
	return initialContextToken(append([]byte{0x02, 0x00}, rep...)), nil
}

// apRep builds the KRB-AP-REP answering an authenticator: its time, no subkey (the
// initiator's stays in use) and the acceptor's first sequence number.
func apRep(session types.EncryptionKey, a types.Authenticator, seq int64) ([]byte, error) {
	part := messages.EncAPRepPart{CTime: a.CTime, Cusec: a.Cusec, SequenceNumber: seq}
	b, err := asn1.Marshal(part)
	if err != nil {
		return nil, fmt.Errorf("sasl: AP-REP: %w", err)
	}
	b = asn1tools.AddASNAppTag(b, asnAppTag.EncAPRepPart)
	ed, err := crypto.GetEncryptedData(b, session, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, fmt.Errorf("sasl: AP-REP: %w", err)
	}
	rep := messages.APRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: ed}
	b, err = asn1.Marshal(rep)
	if err != nil {
		return nil, fmt.Errorf("sasl: AP-REP: %w", err)
	}
	return asn1tools.AddASNAppTag(b, asnAppTag.APREP), nil
}

// offer returns the security layer offer and moves to the last step.
func (g *GSSAPI) offer() ([]byte, error) {
	payload := []byte{qopAuth, byte(gssMaxBuffer >> 16), byte(gssMaxBuffer >> 8 & 0xff), byte(gssMaxBuffer & 0xff)}
	tok, err := wrap(g.key, g.sendSq, payload)
	if err != nil {
		return nil, err
	}
	g.sendSq++
	g.step = 2
	return tok, nil
}

// finish checks the client's choice of security layer and completes the exchange.
func (g *GSSAPI) finish(token []byte) error {
	p, err := unwrap(g.key, token)
	if err != nil {
		return err
	}
	if len(p) < 4 {
		return fmt.Errorf("%w: security layer choice of %d bytes", ErrGSSMalformed, len(p))
	}
	if p[0]&qopAuth == 0 {
		return fmt.Errorf("%w: client selected unsupported protection %d (only auth is offered)", ErrGSSProtocol, p[0])
	}
	if !utf8.Valid(p[4:]) {
		return fmt.Errorf("%w: authorization id is not UTF-8", ErrGSSMalformed)
	}
	g.authz = string(p[4:])
	g.step = 3
	return nil
}

// wrap makes an acceptor's RFC 4121 wrap token without confidentiality.
func wrap(key types.EncryptionKey, seq uint64, payload []byte) ([]byte, error) {
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGSSRejected, err)
	}
	hdr := wrapHeader(wrapSentByAcceptor, seq)
	ck, err := et.GetChecksumHash(key.KeyValue, append(append([]byte{}, payload...), hdr...), keyusage.GSSAPI_ACCEPTOR_SEAL)
	if err != nil {
		return nil, fmt.Errorf("sasl: wrap token: %w", err)
	}
	ck = ck[:et.GetHMACBitLength()/8]
	binary.BigEndian.PutUint16(hdr[4:6], uint16(len(ck)))
	return append(append(hdr, payload...), ck...), nil
}

// wrapHeader is a wrap token header with EC and RRC zero, as the checksum covers it.
func wrapHeader(fl byte, seq uint64) []byte {
	h := []byte{0x05, 0x04, fl, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint64(h[8:], seq)
	return h
}

// unwrap verifies an initiator's RFC 4121 wrap token without confidentiality and returns its
// payload. A sealed (encrypted) token is refused: the security layer negotiation never uses
// one.
func unwrap(key types.EncryptionKey, tok []byte) ([]byte, error) {
	if len(tok) < 16 || tok[0] != 0x05 || tok[1] != 0x04 || tok[3] != 0xff {
		return nil, fmt.Errorf("%w: not a wrap token", ErrGSSMalformed)
	}
	fl := tok[2]
	if fl&wrapSentByAcceptor != 0 {
		return nil, fmt.Errorf("%w: wrap token sent by the acceptor", ErrGSSProtocol)
	}
	if fl&wrapSealed != 0 {
		return nil, fmt.Errorf("%w: sealed wrap token in the security layer negotiation", ErrGSSProtocol)
	}
	if fl&wrapAcceptorSubkey != 0 {
		return nil, fmt.Errorf("%w: wrap token claims an acceptor subkey, none was sent", ErrGSSProtocol)
	}
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGSSRejected, err)
	}
	ec := int(binary.BigEndian.Uint16(tok[4:6]))
	rrc := int(binary.BigEndian.Uint16(tok[6:8]))
	seq := binary.BigEndian.Uint64(tok[8:16])
	body := tok[16:]
	if ec != et.GetHMACBitLength()/8 || len(body) < ec {
		return nil, fmt.Errorf("%w: wrap token checksum length %d for %d bytes", ErrGSSMalformed, ec, len(body))
	}
	if len(body) > 0 && rrc%len(body) != 0 { // undo the right rotation
		r := rrc % len(body)
		body = append(append([]byte{}, body[r:]...), body[:r]...)
	}
	payload, ck := body[:len(body)-ec], body[len(body)-ec:]
	want, err := et.GetChecksumHash(key.KeyValue, append(append([]byte{}, payload...), wrapHeader(fl, seq)...), keyusage.GSSAPI_INITIATOR_SEAL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGSSRejected, err)
	}
	if !hmac.Equal(ck, want[:ec]) {
		return nil, fmt.Errorf("%w: wrap token checksum does not verify", ErrGSSRejected)
	}
	return payload, nil
}

// ParseInitialContextToken returns the mechanism-specific part of a GSS-API initial context
// token (RFC 2743 3.1: [APPLICATION 0] with the mechanism OID first) whose mechanism is
// Kerberos V5.
func ParseInitialContextToken(tok []byte) ([]byte, error) {
	if len(tok) < 2 || tok[0] != 0x60 {
		return nil, fmt.Errorf("%w: not a GSS-API initial context token", ErrGSSMalformed)
	}
	n, hl := 0, 2
	switch l := int(tok[1]); {
	case l < 0x80:
		n = l
	case l == 0x80 || l > 0x84:
		return nil, fmt.Errorf("%w: bad token length", ErrGSSMalformed)
	default:
		k := l & 0x7f
		if len(tok) < 2+k {
			return nil, fmt.Errorf("%w: truncated token length", ErrGSSMalformed)
		}
		for _, b := range tok[2 : 2+k] {
			n = n<<8 | int(b)
			if n > MaxGSSAPIToken {
				return nil, fmt.Errorf("%w: token length %d", ErrGSSMalformed, n)
			}
		}
		hl = 2 + k
	}
	if n != len(tok)-hl {
		return nil, fmt.Errorf("%w: token length %d, %d bytes follow", ErrGSSMalformed, n, len(tok)-hl)
	}
	rest := tok[hl:]
	if !bytes.HasPrefix(rest, krb5OID) {
		return nil, fmt.Errorf("%w: mechanism is not Kerberos V5", ErrGSSMalformed)
	}
	return rest[len(krb5OID):], nil
}

// initialContextToken frames a Kerberos V5 context token as ParseInitialContextToken reads it
// (RFC 1964/4121 frame every context establishment token so).
func initialContextToken(inner []byte) []byte {
	body := append(append([]byte{}, krb5OID...), inner...)
	return append(append([]byte{0x60}, asn1tools.MarshalLengthBytes(len(body))...), body...)
}

// ReplayCache remembers the authenticators accepted within the clock skew (RFC 4120 3.2.3);
// safe for concurrent use.
type ReplayCache struct {
	mu   sync.Mutex
	seen map[string]time.Time // client, realm and authenticator time -> when it can be forgotten
}

// add records an authenticator and reports whether it was new.
func (c *ReplayCache) add(a types.Authenticator, skew time.Duration) bool {
	k := a.CName.PrincipalNameString() + "@" + a.CRealm + "\x00" + a.CTime.UTC().Format(time.RFC3339) + "." + strconv.Itoa(a.Cusec)
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]time.Time{}
	}
	if len(c.seen) > 1024 {
		for k, t := range c.seen {
			if now.After(t) {
				delete(c.seen, k)
			}
		}
	}
	if t, ok := c.seen[k]; ok && now.Before(t) {
		return false
	}
	c.seen[k] = now.Add(2 * skew)
	return true
}
