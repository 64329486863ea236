package sasl

import (
	"fmt"
	"strings"
)

// parseDirectives parses an RFC 2831 digest-challenge or digest-response: a comma-separated
// list of name=value directives, each value a token or a quoted-string (with \-escapes), with
// optional linear white space around the elements and empty elements allowed (the #rule of
// RFC 2616). Names are case-insensitive and returned in lower case; a name may appear only
// once (RFC 2831 says so for every directive the server reads).
func parseDirectives(b []byte) (map[string]string, error) {
	out := map[string]string{}
	i := 0
	skipLWS := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
			i++
		}
	}
	for {
		skipLWS()
		if i == len(b) {
			return out, nil
		}
		if b[i] == ',' {
			i++
			continue
		}
		start := i
		for i < len(b) && isTokenChar(b[i]) {
			i++
		}
		if i == start {
			return nil, fmt.Errorf("%w: byte %d: want a directive name, got %q", ErrMalformed, i, b[i])
		}
		name := strings.ToLower(string(b[start:i]))
		skipLWS()
		if i == len(b) || b[i] != '=' {
			return nil, fmt.Errorf("%w: directive %q has no '='", ErrMalformed, name)
		}
		i++
		skipLWS()
		var val []byte
		if i < len(b) && b[i] == '"' {
			i++
			closed := false
			for i < len(b) {
				c := b[i]
				i++
				if c == '\\' && i < len(b) {
					val = append(val, b[i])
					i++
					continue
				}
				if c == '"' {
					closed = true
					break
				}
				val = append(val, c)
			}
			if !closed {
				return nil, fmt.Errorf("%w: directive %q: unterminated quoted string", ErrMalformed, name)
			}
		} else {
			start := i
			for i < len(b) && isTokenChar(b[i]) {
				i++
			}
			val = b[start:i]
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%w: directive %q appears twice", ErrMalformed, name)
		}
		out[name] = string(val)
		skipLWS()
		if i < len(b) && b[i] != ',' {
			return nil, fmt.Errorf("%w: byte %d after directive %q: want ',', got %q", ErrMalformed, i, name, b[i])
		}
	}
}

// isTokenChar reports whether c may appear in an RFC 2616 token: any CHAR except CTLs and
// separators.
func isTokenChar(c byte) bool {
	if c <= 32 || c >= 127 {
		return false
	}
	return !strings.ContainsRune("()<>@,;:\\\"/[]?={}", rune(c))
}

// quote returns s as an RFC 2616 quoted-string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}
