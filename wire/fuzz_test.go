package wire

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var writeCorpus = flag.Bool("write-corpus", false, "regenerate the fuzz seed corpora under testdata/fuzz")

// reencode checks that encoding a successfully decoded record and decoding it again gives it back.
func reencode(t *testing.T, got Record, decode func([]byte) (Record, error)) {
	t.Helper()
	b := encode(got)
	again, err := decode(b)
	if err != nil {
		t.Fatalf("re-decoding %+v from % x: %v", got, b, err)
	}
	if !reflect.DeepEqual(again, got) {
		t.Fatalf("decode(encode(x)) != x:\n   x %+v\n got %+v", got, again)
	}
}

// decodeAs returns a decode function for records of rec's type.
func decodeAs(rec Record) func([]byte) (Record, error) {
	return func(b []byte) (Record, error) {
		r := newLike(rec)
		return r, r.Decode(NewDecoder(b))
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range sampleRequests() {
		f.Add(int32(s.op), encode(s.rec))
	}
	f.Fuzz(func(t *testing.T, op int32, body []byte) {
		rec, err := DecodeRequest(OpCode(op), body)
		if err != nil {
			if rec != nil {
				t.Fatalf("record %+v with error %v", rec, err)
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrBadMulti) && !errors.Is(err, ErrUnknownOp) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if rec == nil {
			return
		}
		reencode(t, rec, func(b []byte) (Record, error) { return DecodeRequest(OpCode(op), b) })
	})
}

func FuzzConnectRequest(f *testing.F) {
	f.Add(encode(&ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}))
	f.Add(encode(&ConnectRequest{LastZxidSeen: 7, TimeOut: 4000, SessionID: 9, Passwd: testPwd, HasReadOnly: true, ReadOnly: true}))
	f.Add(encode(&ConnectResponse{TimeOut: 30000, SessionID: 9, Passwd: testPwd}))
	f.Add(encode(&ConnectResponse{Passwd: make([]byte, 16), HasReadOnly: true}))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The same bytes through both handshake records.
		for _, rec := range []Record{&ConnectRequest{}, &ConnectResponse{}} {
			if err := rec.Decode(NewDecoder(b)); err == nil {
				reencode(t, rec, decodeAs(rec))
			} else if !errors.Is(err, ErrMalformed) {
				t.Fatalf("unexpected error %v", err)
			}
		}
	})
}

func FuzzMultiRequest(f *testing.F) {
	for _, s := range sampleRequests() {
		if _, ok := s.rec.(*MultiRequest); ok {
			f.Add(encode(s.rec))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m MultiRequest
		if err := m.Decode(NewDecoder(b)); err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrBadMulti) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if len(m.Ops) > len(b)/9 {
			t.Fatalf("%d ops from %d bytes", len(m.Ops), len(b))
		}
		reencode(t, &m, decodeAs(&m))
	})
}

func FuzzMultiResponse(f *testing.F) {
	f.Add(encode(sampleMultiResponse))
	f.Add(encode(&MultiResponse{Results: []MultiResult{{Op: OpError}, {Op: OpError, Err: ErrBadVersion}, {Op: OpError, Err: ErrRuntimeInconsistency}}}))
	f.Add(encode(&MultiResponse{}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m MultiResponse
		if err := m.Decode(NewDecoder(b)); err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrBadMulti) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		reencode(t, &m, decodeAs(&m))
	})
}

func FuzzReadFrame(f *testing.F) {
	f.Add(AppendFrame(AppendFrame(nil, []byte("abc")), nil))
	f.Add(AppendFrame(nil, encode(&ConnectRequest{Passwd: make([]byte, 16), HasReadOnly: true})))
	f.Add([]byte("ruok"))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 1})
	const max = 1024
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bufio.NewReaderSize(bytes.NewReader(in), 16)
		var out, buf []byte
		for {
			var err error
			buf, err = ReadFrame(r, buf, max)
			if err != nil {
				consumed := len(out)
				switch {
				case err == io.EOF:
					if consumed != len(in) {
						t.Fatalf("EOF after %d of %d bytes", consumed, len(in))
					}
				case err == io.ErrUnexpectedEOF:
				case errors.Is(err, ErrFrameTooLarge):
					if n := int32(uint32(in[consumed])<<24 | uint32(in[consumed+1])<<16 | uint32(in[consumed+2])<<8 | uint32(in[consumed+3])); n >= 0 && n <= max {
						t.Fatalf("length %d rejected", n)
					}
				default:
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(buf) > max {
				t.Fatalf("frame of %d bytes", len(buf))
			}
			out = AppendFrame(out, buf)
			if !bytes.Equal(out, in[:len(out)]) {
				t.Fatalf("frames do not re-encode to the input")
			}
		}
	})
}

// TestWriteFuzzCorpus regenerates testdata/fuzz from valid encodings (go test -run
// TestWriteFuzzCorpus -write-corpus); the fuzz targets' f.Add seeds are the same inputs.
func TestWriteFuzzCorpus(t *testing.T) {
	if !*writeCorpus {
		t.Skip("run with -write-corpus to regenerate")
	}
	write := func(target string, i int, args ...any) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.WriteString("go test fuzz v1\n")
		for _, a := range args {
			switch v := a.(type) {
			case int32:
				fmt.Fprintf(&b, "int32(%d)\n", v)
			case []byte:
				fmt.Fprintf(&b, "[]byte(%q)\n", v)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%03d", i)), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range sampleRequests() {
		write("FuzzDecodeRequest", i, int32(s.op), encode(s.rec))
	}
	n := map[string]int{}
	for _, r := range sampleRecords() {
		target := ""
		switch r.(type) {
		case *ConnectRequest, *ConnectResponse:
			target = "FuzzConnectRequest"
		case *MultiRequest:
			target = "FuzzMultiRequest"
		case *MultiResponse:
			target = "FuzzMultiResponse"
		default:
			continue
		}
		write(target, n[target], encode(r))
		n[target]++
	}
	frames := AppendFrame(nil, encode(&ConnectRequest{Passwd: testPwd, HasReadOnly: true}))
	for i, s := range sampleRequests()[:5] {
		write("FuzzReadFrame", i, frames)
		frames = AppendFrame(frames, append(encode(&RequestHeader{Xid: int32(i + 1), Op: s.op}), encode(s.rec)...))
	}
	write("FuzzReadFrame", 5, []byte("ruok"))
	write("FuzzReadFrame", 6, []byte("\x7f\xff\xff\xff"))
}
