package sasl

import (
	"fmt"
	"io"
	"strings"
)

// JAASEntry is one login module line of a JAAS section:
// `ModuleClass Flag [key=value ...];`.
type JAASEntry struct {
	Module  string
	Flag    string // required, requisite, sufficient or optional (lower case)
	Options map[string]string
	Line    int
}

// JAAS is a parsed JAAS login configuration file.
type JAAS struct {
	File     string
	Sections map[string][]JAASEntry
}

// ParseJAAS parses the JAAS login configuration syntax of Java's default ConfigFile:
//
//	Name {
//	    ModuleClass Flag key=value key="quoted value";
//	    ...
//	};
//
// with // and /* */ comments, values quoted with " or ' (\-escapes inside) or bare words, any
// number of sections (a name may appear once) and any number of entries in each. Errors name
// the file and line. ${...} property references are not expanded.
func ParseJAAS(file string, r io.Reader) (*JAAS, error) {
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, file, err)
	}
	p := &jaasParser{file: file, src: src, line: 1}
	out := &JAAS{File: file, Sections: map[string][]JAASEntry{}}
	for {
		t, err := p.next()
		if err != nil {
			return nil, err
		}
		if t.kind == tokEOF {
			return out, nil
		}
		if t.kind != tokWord && t.kind != tokQuoted {
			return nil, p.errAt(t, "want a section name, got %s", t)
		}
		name, line := t.text, t.line
		if _, dup := out.Sections[name]; dup {
			return nil, p.errAt(t, "section %q appears twice", name)
		}
		if err := p.expect('{'); err != nil {
			return nil, err
		}
		var entries []JAASEntry
		for {
			t, err := p.next()
			if err != nil {
				return nil, err
			}
			if t.kind == '}' {
				break
			}
			if t.kind != tokWord {
				return nil, p.errAt(t, "in section %q: want a login module class or '}', got %s", name, t)
			}
			e, err := p.entry(t)
			if err != nil {
				return nil, err
			}
			entries = append(entries, e)
		}
		if err := p.expect(';'); err != nil {
			return nil, err
		}
		if len(entries) == 0 {
			return nil, fmt.Errorf("%w: %s:%d: section %q has no login module", ErrConfig, file, line, name)
		}
		out.Sections[name] = entries
	}
}

// entry parses the rest of a login module line after its class name.
func (p *jaasParser) entry(module token) (JAASEntry, error) {
	e := JAASEntry{Module: module.text, Line: module.line, Options: map[string]string{}}
	t, err := p.next()
	if err != nil {
		return e, err
	}
	e.Flag = strings.ToLower(t.text)
	switch {
	case t.kind != tokWord:
		return e, p.errAt(t, "login module %s: want a control flag, got %s", e.Module, t)
	case e.Flag != "required" && e.Flag != "requisite" && e.Flag != "sufficient" && e.Flag != "optional":
		return e, p.errAt(t, "login module %s: control flag %q is not required, requisite, sufficient or optional", e.Module, t.text)
	}
	for {
		t, err := p.next()
		if err != nil {
			return e, err
		}
		if t.kind == ';' {
			return e, nil
		}
		if t.kind != tokWord {
			return e, p.errAt(t, "login module %s: want an option name or ';', got %s", e.Module, t)
		}
		if err := p.expect('='); err != nil {
			return e, err
		}
		v, err := p.next()
		if err != nil {
			return e, err
		}
		if v.kind != tokWord && v.kind != tokQuoted {
			return e, p.errAt(v, "option %s: want a value, got %s", t.text, v)
		}
		e.Options[t.text] = v.text
	}
}

const (
	tokEOF    = -1
	tokWord   = -2
	tokQuoted = -3
)

type token struct {
	kind int // tokEOF, tokWord, tokQuoted or the punctuation byte
	text string
	line int
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of file"
	case tokWord:
		return fmt.Sprintf("%q", t.text)
	case tokQuoted:
		return fmt.Sprintf("quoted %q", t.text)
	}
	return fmt.Sprintf("'%c'", rune(t.kind))
}

type jaasParser struct {
	file string
	src  []byte
	pos  int
	line int
}

func (p *jaasParser) errAt(t token, format string, args ...any) error {
	return fmt.Errorf("%w: %s:%d: %s", ErrConfig, p.file, t.line, fmt.Sprintf(format, args...))
}

func (p *jaasParser) expect(kind byte) error {
	t, err := p.next()
	if err != nil {
		return err
	}
	if t.kind != int(kind) {
		return p.errAt(t, "want '%c', got %s", kind, t)
	}
	return nil
}

// next returns the next token, skipping white space and comments.
func (p *jaasParser) next() (token, error) {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '\n':
			p.line++
			p.pos++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			p.pos++
		case c == '/' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '/':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case c == '/' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '*':
			start := p.line
			end := strings.Index(string(p.src[p.pos+2:]), "*/")
			if end < 0 {
				return token{}, fmt.Errorf("%w: %s:%d: unterminated /* comment", ErrConfig, p.file, start)
			}
			p.line += strings.Count(string(p.src[p.pos:p.pos+2+end]), "\n")
			p.pos += 2 + end + 2
		case c == '{' || c == '}' || c == ';' || c == '=':
			p.pos++
			return token{kind: int(c), line: p.line}, nil
		case c == '"' || c == '\'':
			return p.quoted(c)
		default:
			start := p.pos
			for p.pos < len(p.src) && isJAASWordByte(p.src[p.pos]) &&
				!(p.src[p.pos] == '/' && p.pos+1 < len(p.src) && (p.src[p.pos+1] == '/' || p.src[p.pos+1] == '*')) {
				p.pos++
			}
			if p.pos == start {
				return token{}, fmt.Errorf("%w: %s:%d: unexpected character %q", ErrConfig, p.file, p.line, c)
			}
			return token{kind: tokWord, text: string(p.src[start:p.pos]), line: p.line}, nil
		}
	}
	return token{kind: tokEOF, line: p.line}, nil
}

func isJAASWordByte(c byte) bool {
	return c > ' ' && c != 0x7f && !strings.ContainsRune("{};=\"'", rune(c))
}

// quoted reads a quoted string; \n, \t, \r, \b, \f and \<any> escapes are understood.
func (p *jaasParser) quoted(q byte) (token, error) {
	line := p.line
	p.pos++
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		p.pos++
		switch {
		case c == q:
			return token{kind: tokQuoted, text: b.String(), line: line}, nil
		case c == '\n':
			return token{}, fmt.Errorf("%w: %s:%d: quoted string not closed on its line", ErrConfig, p.file, line)
		case c == '\\' && p.pos < len(p.src):
			e := p.src[p.pos]
			p.pos++
			switch e {
			case 'n':
				e = '\n'
			case 't':
				e = '\t'
			case 'r':
				e = '\r'
			case 'b':
				e = '\b'
			case 'f':
				e = '\f'
			}
			b.WriteByte(e)
		default:
			b.WriteByte(c)
		}
	}
	return token{}, fmt.Errorf("%w: %s:%d: quoted string not closed", ErrConfig, p.file, line)
}
