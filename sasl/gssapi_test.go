package sasl

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

const testRealm = "EXAMPLE.COM"

// testKeytab is the keytab of zookeeper/localhost@EXAMPLE.COM.
func testKeytab(t testing.TB) *keytab.Keytab {
	t.Helper()
	kt := keytab.New()
	if err := kt.AddEntry("zookeeper/localhost", testRealm, "service secret", time.Now(), 2, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	return kt
}

// gssClient is the initiator side as a Kerberos client library runs it, given a service
// ticket (what a KDC would have issued).
type gssClient struct {
	subkey types.EncryptionKey
	req    []byte
}

// newGSSClient makes the initial context token of client@EXAMPLE.COM for the service of kt.
func newGSSClient(t testing.TB, kt *keytab.Keytab, service string, mutual bool, skew time.Duration) (*gssClient, types.EncryptionKey) {
	t.Helper()
	return newGSSClientEtype(t, kt, service, mutual, skew, etypeID.AES256_CTS_HMAC_SHA1_96, 32)
}

// newGSSClientEtype is newGSSClient with a ticket and subkey of another enctype.
func newGSSClientEtype(t testing.TB, kt *keytab.Keytab, service string, mutual bool, skew time.Duration, et int32, keyLen int) (*gssClient, types.EncryptionKey) {
	t.Helper()
	now := time.Now().UTC()
	cname := types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, "client")
	sname := types.NewPrincipalName(nametype.KRB_NT_SRV_HST, service)
	tkt, session, err := messages.NewTicket(cname, testRealm, sname, testRealm, types.NewKrbFlags(), kt,
		et, 2, now, now, now.Add(time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	auth, err := types.NewAuthenticator(testRealm, cname)
	if err != nil {
		t.Fatal(err)
	}
	auth.CTime = auth.CTime.Add(skew)
	if err := auth.GenerateSeqNumberAndSubKey(et, keyLen); err != nil {
		t.Fatal(err)
	}
	ck := make([]byte, 24)
	binary.LittleEndian.PutUint32(ck, 16)
	fl := uint32(gssapi.ContextFlagSequence)
	if mutual {
		fl |= gssapi.ContextFlagMutual
	}
	binary.LittleEndian.PutUint32(ck[20:], fl)
	auth.Cksum = types.Checksum{CksumType: gssChecksumType, Checksum: ck}
	req, err := messages.NewAPReq(tkt, session, auth)
	if err != nil {
		t.Fatal(err)
	}
	if mutual {
		types.SetFlag(&req.APOptions, flags.APOptionMutualRequired)
	}
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return &gssClient{subkey: auth.SubKey, req: initialContextToken(append([]byte{0x01, 0x00}, b...))}, session
}

// answer checks the server's security layer offer and returns the client's choice.
func (c *gssClient) answer(t testing.TB, offer []byte, qop byte, authz string) []byte {
	t.Helper()
	var wt gssapi.WrapToken
	if err := wt.Unmarshal(offer, true); err != nil {
		t.Fatalf("offer: %v", err)
	}
	if ok, err := wt.Verify(c.subkey, keyusage.GSSAPI_ACCEPTOR_SEAL); !ok || err != nil {
		t.Fatalf("offer does not verify: %v", err)
	}
	if want := []byte{1, 1, 0, 0}; string(wt.Payload) != string(want) {
		t.Fatalf("offer %x, want %x", wt.Payload, want)
	}
	rsp, err := gssapi.NewInitiatorWrapToken(append([]byte{qop, 0, 0, 0}, authz...), c.subkey)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rsp.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGSSAPIExchange(t *testing.T) {
	kt := testKeytab(t)
	princ := types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, "zookeeper/localhost")
	for _, mutual := range []bool{true, false} {
		c, session := newGSSClient(t, kt, "zookeeper/localhost", mutual, 0)
		g := NewGSSAPI(GSSAPIOptions{Keytab: kt, Principal: &princ, Replay: &ReplayCache{}})
		out, err := g.Step(c.req)
		if err != nil {
			t.Fatalf("mutual %v: AP-REQ: %v", mutual, err)
		}
		if mutual {
			inner, err := ParseInitialContextToken(out)
			if err != nil || len(inner) < 2 || inner[0] != 0x02 || inner[1] != 0x00 {
				t.Fatalf("AP-REP token %x: %v", out, err)
			}
			var rep messages.APRep
			if err := rep.Unmarshal(inner[2:]); err != nil {
				t.Fatalf("AP-REP: %v", err)
			}
			plain, err := crypto.DecryptEncPart(rep.EncPart, session, keyusage.AP_REP_ENCPART)
			if err != nil {
				t.Fatalf("AP-REP enc-part: %v", err)
			}
			var part messages.EncAPRepPart
			if err := part.Unmarshal(plain); err != nil {
				t.Fatalf("EncAPRepPart: %v", err)
			}
			if out, err = g.Step(nil); err != nil {
				t.Fatalf("empty token: %v", err)
			}
		}
		if g.Complete() {
			t.Fatal("complete before the security layer choice")
		}
		last, err := g.Step(c.answer(t, out, 1, "client@EXAMPLE.COM"))
		if err != nil || last != nil || !g.Complete() {
			t.Fatalf("mutual %v: last step: %x, %v, complete %v", mutual, last, err, g.Complete())
		}
		if g.User() != "client@EXAMPLE.COM" || g.AuthzID() != "client@EXAMPLE.COM" {
			t.Errorf("user %q authzid %q", g.User(), g.AuthzID())
		}
		if _, err := g.Step(nil); !errors.Is(err, ErrGSSProtocol) {
			t.Errorf("step after completion: %v", err)
		}
	}
}

func TestGSSAPIRejects(t *testing.T) {
	kt := testKeytab(t)
	princ := types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, "zookeeper/localhost")
	other := types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, "HTTP/localhost")
	newG := func(p *types.PrincipalName, r *ReplayCache) *GSSAPI {
		return NewGSSAPI(GSSAPIOptions{Keytab: kt, Principal: p, Replay: r})
	}
	// A ticket for another service, a stale authenticator, a replay.
	c, _ := newGSSClient(t, kt, "zookeeper/localhost", false, 0)
	if _, err := newG(&other, nil).Step(c.req); !errors.Is(err, ErrGSSRejected) {
		t.Errorf("ticket for another principal: %v", err)
	}
	stale, _ := newGSSClient(t, kt, "zookeeper/localhost", false, -time.Hour)
	if _, err := newG(&princ, nil).Step(stale.req); !errors.Is(err, ErrGSSRejected) {
		t.Errorf("clock skew: %v", err)
	}
	r := &ReplayCache{}
	if _, err := newG(&princ, r).Step(c.req); err != nil {
		t.Fatal(err)
	}
	if _, err := newG(&princ, r).Step(c.req); !errors.Is(err, ErrGSSRejected) {
		t.Errorf("replay: %v", err)
	}
	// RC4 (RFC 1964 tokens) is refused.
	rc4kt := testKeytab(t)
	if err := rc4kt.AddEntry("zookeeper/localhost", testRealm, "service secret", time.Now(), 2, etypeID.RC4_HMAC); err != nil {
		t.Fatal(err)
	}
	rc4, _ := newGSSClientEtype(t, rc4kt, "zookeeper/localhost", false, 0, etypeID.RC4_HMAC, 16)
	if _, err := NewGSSAPI(GSSAPIOptions{Keytab: rc4kt, Principal: &princ}).Step(rc4.req); !errors.Is(err, ErrGSSRejected) ||
		!strings.Contains(err.Error(), "RFC 1964") {
		t.Errorf("rc4: %v", err)
	}
	// Garbage, oversize and truncated tokens; an empty initial token (a DIGEST-MD5 client).
	for _, tok := range [][]byte{nil, []byte("garbage"), make([]byte, MaxGSSAPIToken+1), c.req[:len(c.req)-1],
		{0x60, 0x84, 0xff, 0xff, 0xff, 0xff}} {
		g := newG(&princ, nil)
		if _, err := g.Step(tok); !errors.Is(err, ErrGSSMalformed) {
			t.Errorf("token %.16x: %v", tok, err)
		}
		if _, err := g.Step(c.req); !errors.Is(err, ErrGSSProtocol) {
			t.Errorf("after failure: %v", err)
		}
	}
	// A bad security layer choice: wrong checksum key, a qop not offered, not empty after
	// the AP-REP.
	c2, _ := newGSSClient(t, kt, "zookeeper/localhost", false, 0)
	g := newG(&princ, nil)
	offer, err := g.Step(c2.req)
	if err != nil {
		t.Fatal(err)
	}
	bad := c2.answer(t, offer, 1, "")
	bad[len(bad)-1] ^= 1
	if _, err := g.Step(bad); !errors.Is(err, ErrGSSRejected) {
		t.Errorf("bad checksum: %v", err)
	}
	c3, _ := newGSSClient(t, kt, "zookeeper/localhost", false, 0)
	g = newG(&princ, nil)
	offer, _ = g.Step(c3.req)
	if _, err := g.Step(c3.answer(t, offer, 4, "")); !errors.Is(err, ErrGSSProtocol) {
		t.Errorf("privacy chosen: %v", err)
	}
	c4, _ := newGSSClient(t, kt, "zookeeper/localhost", true, 0)
	g = newG(&princ, nil)
	if _, err := g.Step(c4.req); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Step([]byte{1}); !errors.Is(err, ErrGSSProtocol) {
		t.Errorf("non-empty token after the AP-REP: %v", err)
	}
}

func TestParseDefaultRealm(t *testing.T) {
	conf := "# c\n[logging]\n default_realm = NOPE\n[libdefaults]\n\tdns_lookup_realm = false\n\tdefault_realm = EXAMPLE.COM\n[realms]\n"
	if got := parseDefaultRealm(conf); got != "EXAMPLE.COM" {
		t.Errorf("got %q", got)
	}
	if got := parseDefaultRealm("[realms]\n"); got != "" {
		t.Errorf("got %q", got)
	}
}

// FuzzGSSAPIToken feeds arbitrary tokens to each step of the exchange: none may panic, and
// after an error the exchange stays failed.
func FuzzGSSAPIToken(f *testing.F) {
	kt := testKeytab(f)
	princ := types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, "zookeeper/localhost")
	c, _ := newGSSClient(f, kt, "zookeeper/localhost", false, 0)
	f.Add(c.req, []byte{})
	f.Add([]byte{0x60, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02, 0x01, 0x00}, []byte{5, 4, 0, 0xff})
	f.Add([]byte("garbage"), []byte{})
	ap, err := asn1.Marshal(42)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(initialContextToken(append([]byte{1, 0}, ap...)), []byte{5, 4, 0, 0xff, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, first, second []byte) {
		g := NewGSSAPI(GSSAPIOptions{Keytab: kt, Principal: &princ})
		if _, err := g.Step(first); err != nil {
			if _, err2 := g.Step(second); err2 == nil {
				t.Fatalf("step after failure (%v) succeeded", err)
			}
			return
		}
		// A valid AP-REQ (the seed): any last token must be checked.
		if _, err := g.Step(second); err == nil && g.Complete() && len(second) < 16 {
			t.Fatalf("completed on a %d-byte token", len(second))
		}
		_, _ = unwrap(types.EncryptionKey{KeyType: etypeID.AES256_CTS_HMAC_SHA1_96, KeyValue: make([]byte, 32)}, second)
		_, _ = ParseInitialContextToken(first)
	})
}
