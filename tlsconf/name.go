package tlsconf

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// rfc2253Keywords are the attribute types Java writes by keyword in RFC 2253 names (AVAKeyword's
// rfc2253Compliant ones); every other type is written as its dotted OID with a #hex value.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

type rawATV struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdnSET is one relative distinguished name (encoding/asn1 reads a type named *SET as a SET).
type rdnSET []rawATV

// RFC2253Name returns the certificate subject as Java's X500Principal.getName() does, the
// identity ZooKeeper's X509AuthenticationProvider gives a client: RDNs last to first, joined by
// ','; the attributes of a multi-valued RDN in encoding order, joined by '+'; the keywords of
// rfc2253Keywords; a string value with each of ,=+<>#;"\ escaped by a backslash, NUL written as
// \00 and leading and trailing spaces escaped; a value of another type, or of a type without
// a keyword, as '#' and the lowercase hex of its DER encoding.
func RFC2253Name(cert *x509.Certificate) (string, error) {
	var seq []rdnSET
	if _, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil {
		return "", err
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if i < len(seq)-1 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeATV(&b, atv)
		}
	}
	return b.String(), nil
}

func writeATV(b *strings.Builder, atv rawATV) {
	oid := atv.Type.String()
	kw, ok := rfc2253Keywords[oid]
	s, isString := derString(atv.Value)
	if !ok || !isString {
		if !ok {
			kw = oid
		}
		b.WriteString(kw)
		b.WriteString("=#")
		b.WriteString(hex.EncodeToString(atv.Value.FullBytes))
		return
	}
	b.WriteString(kw)
	b.WriteByte('=')
	var esc strings.Builder
	for _, r := range s {
		switch {
		case strings.ContainsRune(",=+<>#;\"\\", r):
			esc.WriteByte('\\')
			esc.WriteRune(r)
		case r == 0:
			esc.WriteString("\\00")
		default:
			esc.WriteRune(r)
		}
	}
	v := []rune(esc.String())
	lead := 0
	for lead < len(v) && (v[lead] == ' ' || v[lead] == '\r') {
		lead++
	}
	trail := len(v) - 1
	for trail >= 0 && (v[trail] == ' ' || v[trail] == '\r') {
		trail--
	}
	for i, r := range v {
		if i < lead || i > trail {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
}

// derString decodes the string types Java's AVA treats as strings (isDerString, non-canonical)
// as Java 17 does (checked with X500Principal): PrintableString, IA5String and GeneralString as
// US-ASCII, UTF8String and T61String as UTF-8, BMPString one character per byte; a byte that
// does not decode is U+FFFD.
func derString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagPrintableString, asn1.TagIA5String, 27: // 27: GeneralString
		r := make([]rune, len(v.Bytes))
		for i, c := range v.Bytes {
			r[i] = rune(c)
			if c >= 0x80 {
				r[i] = utf8.RuneError
			}
		}
		return string(r), true
	case asn1.TagUTF8String, asn1.TagT61String:
		return string([]rune(string(v.Bytes))), true // each invalid byte becomes U+FFFD
	case asn1.TagBMPString:
		r := make([]rune, len(v.Bytes))
		for i, c := range v.Bytes {
			r[i] = rune(c)
		}
		return string(r), true
	}
	return "", false
}
