package sasl

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Errors. A failed exchange wraps one of them; every one of them fails the client's session
// (AUTHFAILED, or SESSIONCLOSEDREQUIRESASLAUTH when SASL is required).
var (
	// ErrMalformed: a digest-response that does not parse, or lacks a directive it needs.
	ErrMalformed = errors.New("sasl: malformed DIGEST-MD5 message")
	// ErrProtocol: a well-formed message the exchange does not allow at this point (an
	// initial response, a foreign nonce, realm or digest-uri, a qop not offered, a message
	// after completion).
	ErrProtocol = errors.New("sasl: DIGEST-MD5 protocol violation")
	// ErrUnknownUser: the username has no password in the JAAS Server section.
	ErrUnknownUser = errors.New("sasl: unknown user")
	// ErrBadResponse: the response digest is not the one the user's password gives (a wrong
	// password, most often).
	ErrBadResponse = errors.New("sasl: DIGEST-MD5 response does not match the password")
	// ErrBadName: the authenticated name is not a valid Kerberos-style name (more than one
	// '@', or '@' with a '/' after it), which ZooKeeper's KerberosName rejects.
	ErrBadName = errors.New("sasl: malformed Kerberos name")
	// ErrConfig: a SASL setting or the JAAS file is not usable.
	ErrConfig = errors.New("sasl: configuration")
)

// ZooKeeper's fixed DIGEST-MD5 names (SecurityUtils and ZooKeeperSaslServer): the SASL server
// is created for protocol "zookeeper" and server name "zk-sasl-md5", which is also its realm.
const (
	ZooKeeperRealm     = "zk-sasl-md5"
	ZooKeeperDigestURI = "zookeeper/zk-sasl-md5"
)

// DigestOptions configure one DIGEST-MD5 server exchange.
type DigestOptions struct {
	// Realm is the one realm offered and accepted (ZooKeeperRealm).
	Realm string
	// DigestURI is the digest-uri the client must name, compared case-insensitively
	// (ZooKeeperDigestURI).
	DigestURI string
	// Password returns the password of an authentication id, and false for an unknown user.
	Password func(user string) (string, bool)
	// Nonce, when not empty, is the nonce to offer (tests); otherwise a random one is made.
	Nonce string
}

// DigestMD5 is the server side of one DIGEST-MD5 exchange (RFC 2831, qop "auth" only). Not
// safe for concurrent use.
type DigestMD5 struct {
	o    DigestOptions
	step int // 0: expects the empty initial token; 1: expects the digest-response; 2: complete
	user string
}

// NewDigestMD5 starts an exchange.
func NewDigestMD5(o DigestOptions) *DigestMD5 { return &DigestMD5{o: o} }

// Complete reports whether the client has been authenticated.
func (d *DigestMD5) Complete() bool { return d.step == 2 }

// User returns the authentication id once Complete.
func (d *DigestMD5) User() string { return d.user }

// Step consumes the client's token and returns the server's next token. The first token is
// empty (ZooKeeper's clients send an empty one to start DIGEST-MD5) and is answered with the
// digest-challenge; the second is the digest-response, answered with rspauth. Any error ends
// the exchange.
func (d *DigestMD5) Step(token []byte) ([]byte, error) {
	switch d.step {
	case 0:
		if len(token) != 0 {
			d.step = 3
			return nil, fmt.Errorf("%w: DIGEST-MD5 takes no initial response (got %d bytes)", ErrProtocol, len(token))
		}
		if d.o.Nonce == "" {
			var b [30]byte
			if _, err := rand.Read(b[:]); err != nil {
				return nil, fmt.Errorf("sasl: nonce: %w", err)
			}
			d.o.Nonce = base64.StdEncoding.EncodeToString(b[:])
		}
		d.step = 1
		return []byte("realm=" + quote(d.o.Realm) + ",nonce=" + quote(d.o.Nonce) +
			`,qop="auth",charset=utf-8,algorithm=md5-sess`), nil
	case 1:
		d.step = 3 // one attempt: any failure ends the exchange
		rsp, err := d.verify(token)
		if err != nil {
			return nil, err
		}
		d.step = 2
		return rsp, nil
	case 2:
		return nil, fmt.Errorf("%w: authentication already complete", ErrProtocol)
	}
	return nil, fmt.Errorf("%w: the exchange has failed", ErrProtocol)
}

// verify checks a digest-response and returns the response-auth message.
func (d *DigestMD5) verify(token []byte) ([]byte, error) {
	dir, err := parseDirectives(token)
	if err != nil {
		return nil, err
	}
	utf := false
	if cs, ok := dir["charset"]; ok {
		if !strings.EqualFold(cs, "utf-8") {
			return nil, fmt.Errorf("%w: charset %q (only utf-8 is offered)", ErrProtocol, cs)
		}
		utf = true
	}
	text := func(name string) (string, error) {
		v := dir[name]
		if !utf {
			return latin1ToString(v), nil
		}
		if !utf8.ValidString(v) {
			return "", fmt.Errorf("%w: %s is not UTF-8", ErrMalformed, name)
		}
		return v, nil
	}
	for _, name := range []string{"username", "nonce", "cnonce", "nc", "digest-uri", "response"} {
		if _, ok := dir[name]; !ok {
			return nil, fmt.Errorf("%w: no %s directive", ErrMalformed, name)
		}
	}
	user, err := text("username")
	if err != nil {
		return nil, err
	}
	realm, err := text("realm")
	if err != nil {
		return nil, err
	}
	if realm != d.o.Realm {
		return nil, fmt.Errorf("%w: realm %q (offered %q)", ErrProtocol, realm, d.o.Realm)
	}
	if dir["nonce"] != d.o.Nonce {
		return nil, fmt.Errorf("%w: nonce is not the one offered", ErrProtocol)
	}
	if nc, err := strconv.ParseUint(dir["nc"], 16, 32); err != nil || nc != 1 {
		return nil, fmt.Errorf("%w: nonce count %q (want 00000001)", ErrProtocol, dir["nc"])
	}
	if dir["cnonce"] == "" {
		return nil, fmt.Errorf("%w: empty cnonce", ErrMalformed)
	}
	qop := dir["qop"]
	if qop == "" {
		qop = "auth"
	}
	if qop != "auth" {
		return nil, fmt.Errorf("%w: qop %q (only auth is offered)", ErrProtocol, qop)
	}
	uri := dir["digest-uri"]
	if !strings.EqualFold(uri, d.o.DigestURI) {
		return nil, fmt.Errorf("%w: digest-uri %q (want %q)", ErrProtocol, uri, d.o.DigestURI)
	}
	if v, ok := dir["maxbuf"]; ok {
		if n, err := strconv.ParseUint(v, 10, 32); err != nil || n == 0 {
			return nil, fmt.Errorf("%w: maxbuf %q", ErrMalformed, v)
		}
	}
	got := dir["response"]
	if len(got) != 32 {
		return nil, fmt.Errorf("%w: response is not 32 hex digits", ErrMalformed)
	}
	pass, ok := d.o.Password(user)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownUser, user)
	}
	authzid, hasAuthzid := dir["authzid"]
	a1 := sessionKey(user, realm, pass, utf, d.o.Nonce, dir["cnonce"], authzid, hasAuthzid)
	want := responseValue(a1, d.o.Nonce, dir["cnonce"], qop, "AUTHENTICATE:"+uri)
	if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return nil, fmt.Errorf("%w: user %q", ErrBadResponse, user)
	}
	d.user = user
	return []byte("rspauth=" + responseValue(a1, d.o.Nonce, dir["cnonce"], qop, ":"+uri)), nil
}

// sessionKey is HEX(H(A1)) for md5-sess: A1 = H(user:realm:password) ":" nonce ":" cnonce
// [":" authzid]. User, realm and password are hashed in ISO 8859-1 when every character fits,
// else (charset utf-8 only) in UTF-8 (RFC 2831 2.1.2.1, as Java's DIGEST-MD5 does).
func sessionKey(user, realm, pass string, utf bool, nonce, cnonce, authzid string, hasAuthzid bool) string {
	h := md5.New()
	h.Write(hashBytes(user, utf))
	h.Write([]byte{':'})
	h.Write(hashBytes(realm, utf))
	h.Write([]byte{':'})
	h.Write(hashBytes(pass, utf))
	a1 := append(h.Sum(nil), ":"+nonce+":"+cnonce...)
	if hasAuthzid {
		a1 = append(a1, ":"+authzid...)
	}
	sum := md5.Sum(a1)
	return hex.EncodeToString(sum[:])
}

// responseValue is HEX(KD(HEX(H(A1)), nonce:nc:cnonce:qop:HEX(H(A2)))) with nc 00000001.
func responseValue(ha1, nonce, cnonce, qop, a2 string) string {
	ha2 := md5.Sum([]byte(a2))
	sum := md5.Sum([]byte(ha1 + ":" + nonce + ":00000001:" + cnonce + ":" + qop + ":" + hex.EncodeToString(ha2[:])))
	return hex.EncodeToString(sum[:])
}

// hashBytes encodes s for hashing: ISO 8859-1 when every rune fits in it, otherwise UTF-8
// under charset utf-8, and ISO 8859-1 with '?' for what does not fit without it (Java's
// String.getBytes("8859_1")).
func hashBytes(s string, utf bool) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xFF {
			if utf {
				return []byte(s)
			}
			r = '?'
		}
		out = append(out, byte(r))
	}
	return out
}

// latin1ToString decodes ISO 8859-1 bytes.
func latin1ToString(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteRune(rune(s[i]))
	}
	return b.String()
}
