package acl

import "strings"

// ipValid is IPAuthenticationProvider.isValid: "addr" or "addr/bits" where addr parses as IPv4
// (dotted quad) or IPv6 (colon form) and 0 <= bits <= the address length in bits.
func ipValid(id string) bool {
	addr, bitsStr, hasBits := strings.Cut(id, "/")
	b := addrBytes(addr)
	if b == nil {
		return false
	}
	if hasBits {
		bits, ok := javaParseInt(bitsStr, 10)
		if !ok || bits < 0 || int(bits) > len(b)*8 {
			return false
		}
	}
	return true
}

// ipMatches is IPAuthenticationProvider.matches(id, aclExpr): the caller's address id and the
// ACL's address, both masked to the ACL's prefix length, must be equal and of the same family.
func ipMatches(id, expr string) bool {
	addr, bitsStr, hasBits := strings.Cut(expr, "/")
	aclAddr := addrBytes(addr)
	if aclAddr == nil {
		return false
	}
	bits := len(aclAddr) * 8
	if hasBits {
		v, ok := javaParseInt(bitsStr, 10)
		if !ok || v < 0 || int(v) > len(aclAddr)*8 {
			return false
		}
		bits = int(v)
	}
	remote := addrBytes(id)
	if remote == nil || len(remote) != len(aclAddr) {
		return false
	}
	maskBits(aclAddr, bits)
	maskBits(remote, bits)
	for i := range remote {
		if remote[i] != aclAddr[i] {
			return false
		}
	}
	return true
}

// maskBits clears every bit after the first bits bits.
func maskBits(b []byte, bits int) {
	start := bits / 8
	if start >= len(b) {
		return
	}
	b[start] &= ^byte((1 << (8 - bits%8)) - 1)
	for i := start + 1; i < len(b); i++ {
		b[i] = 0
	}
}

// addrBytes parses an address the way the ip provider does: anything containing ':' is IPv6,
// else anything containing '.' is IPv4; nil when it does not parse.
func addrBytes(s string) []byte {
	switch {
	case strings.Contains(s, ":"):
		return v6Bytes(s)
	case strings.Contains(s, "."):
		return v4Bytes(s)
	}
	return nil
}

// v4Bytes parses exactly four '.'-separated decimal ints (Java Integer.parseInt: optional sign)
// each in 0..255.
func v4Bytes(s string) []byte {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return nil
	}
	b := make([]byte, 4)
	for i, p := range parts {
		v, ok := javaParseInt(p, 10)
		if !ok || v < 0 || v > 255 {
			return nil
		}
		b[i] = byte(v)
	}
	return b
}

// v6Bytes parses the colon form: at most one "::", groups of 1-4 hex digits, eight groups without
// "::" and at most seven with it. Embedded IPv4 (::ffff:1.2.3.4) and zone ids are not accepted,
// as in ZooKeeper's parser.
func v6Bytes(s string) []byte {
	halves := strings.Split(s, "::")
	var head, tail []string
	switch len(halves) {
	case 1:
		head = strings.Split(halves[0], ":")
		if len(head) != 8 {
			return nil
		}
	case 2:
		if halves[0] != "" {
			head = strings.Split(halves[0], ":")
		}
		if halves[1] != "" {
			tail = strings.Split(halves[1], ":")
		}
		if len(head)+len(tail) >= 8 {
			return nil
		}
	default:
		return nil
	}
	b := make([]byte, 16)
	if !v6Groups(b[:2*len(head)], head) || !v6Groups(b[16-2*len(tail):], tail) {
		return nil
	}
	return b
}

func v6Groups(dst []byte, groups []string) bool {
	for i, g := range groups {
		if g == "" || len(g) > 4 {
			return false
		}
		v, ok := javaParseInt(g, 16)
		if !ok {
			return false
		}
		dst[2*i] = byte(v >> 8)
		dst[2*i+1] = byte(v)
	}
	return true
}

// javaParseInt is Integer.parseInt(s, radix) for ASCII input: an optional '+' or '-' followed by
// at least one digit, the value within int32. (Java also accepts non-ASCII Unicode digits; they
// are rejected here.)
func javaParseInt(s string, radix int64) (int32, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	switch s[0] {
	case '+', '-':
		neg = s[0] == '-'
		s = s[1:]
		if s == "" {
			return 0, false
		}
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d int64
		switch {
		case c >= '0' && c <= '9':
			d = int64(c - '0')
		case c >= 'a' && c <= 'z':
			d = int64(c-'a') + 10
		case c >= 'A' && c <= 'Z':
			d = int64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= radix {
			return 0, false
		}
		v = v*radix + d
		if v > 1<<31 {
			return 0, false
		}
	}
	if neg {
		v = -v
	}
	if v > 1<<31-1 || v < -(1<<31) {
		return 0, false
	}
	return int32(v), true
}
