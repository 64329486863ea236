package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadFrame(t *testing.T) {
	big := bytes.Repeat([]byte{7}, 10000) // larger than bufio's default buffer
	stream := AppendFrame(AppendFrame(AppendFrame(nil, []byte("abc")), nil), big)
	r := bufio.NewReader(bytes.NewReader(stream))
	buf := make([]byte, 0, 2)
	for i, want := range [][]byte{[]byte("abc"), {}, big} {
		got, err := ReadFrame(r, buf, len(big))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d: got %d bytes, %v", i, len(got), err)
		}
		buf = got
	}
	if _, err := ReadFrame(r, buf, 100); err != io.EOF {
		t.Errorf("at end: %v, want io.EOF", err)
	}

	for i, tc := range []struct {
		in   []byte
		max  int
		want error
	}{
		{[]byte{0, 0}, 10, io.ErrUnexpectedEOF},
		{[]byte{0, 0, 0, 5, 1, 2}, 10, io.ErrUnexpectedEOF},
		{[]byte{0, 0, 0, 11}, 10, ErrFrameTooLarge},
		{[]byte{0xff, 0xff, 0xff, 0xff}, 10, ErrFrameTooLarge},
		{[]byte("ruok"), DefaultMaxBuffer, ErrFrameTooLarge},
		{[]byte{0, 0, 0, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 10, nil},
	} {
		_, err := ReadFrame(bufio.NewReader(bytes.NewReader(tc.in)), nil, tc.max)
		if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("%d: ReadFrame(% x, %d) error %v, want %v", i, tc.in, tc.max, err, tc.want)
		}
	}
}

func TestWriteFrame(t *testing.T) {
	var b bytes.Buffer
	if err := WriteFrame(&b, []byte("xy")); err != nil {
		t.Fatal(err)
	}
	if want := AppendFrame(nil, []byte("xy")); !bytes.Equal(b.Bytes(), want) {
		t.Errorf("% x, want % x", b.Bytes(), want)
	}
}

func TestBeginEndFrame(t *testing.T) {
	e := NewEncoder([]byte("pre"))
	mark := BeginFrame(e)
	h := ReplyHeader{Xid: 3, Zxid: 9}
	h.Encode(e)
	(&ExistsResponse{Stat: testStat}).Encode(e)
	EndFrame(e, mark)
	want := AppendReply([]byte("pre"), h, &ExistsResponse{Stat: testStat})
	if !bytes.Equal(e.Bytes(), want) {
		t.Errorf("% x\nwant % x", e.Bytes(), want)
	}
	if n := len(want) - 3 - 4; n != ReplyHeaderSize+StatSize {
		t.Errorf("payload %d bytes", n)
	}
	// The frame parses back.
	payload, err := ReadFrame(bufio.NewReader(bytes.NewReader(want[3:])), nil, DefaultMaxBuffer)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(payload)
	var gh ReplyHeader
	var gb ExistsResponse
	if gh.Decode(d); gb.Decode(d) != nil || gh != h || gb.Stat != testStat || d.Remaining() != 0 {
		t.Errorf("parsed %+v %+v %v", gh, gb, d.Err())
	}
}

func TestFourLetterWord(t *testing.T) {
	words := "conf cons crst dirs dump envi gtmk ruok stmk srvr srst stat wchc wchp wchs mntr isro hash"
	for i, w := range strings.Fields(words) {
		if got, ok := FourLetterWord([]byte(w)); !ok || got != w {
			t.Errorf("%d: %q: %q %v", i, w, got, ok)
		}
	}
	if got, ok := FourLetterWord([]byte("ruokextra")); !ok || got != "ruok" {
		t.Errorf("longer input: %q %v", got, ok)
	}
	for i, in := range []string{"", "ruo", "RUOK", "\x00\x00\x00\x2c", "kour", "rcvr", "apiv"} {
		if got, ok := FourLetterWord([]byte(in)); ok {
			t.Errorf("%d: %q recognised as %q", i, in, got)
		}
	}
	// A real ConnectRequest's length prefix is never a four-letter word.
	if _, ok := FourLetterWord(AppendFrame(nil, make([]byte, ConnectRequestSizeReadOnly))); ok {
		t.Error("connect frame recognised")
	}
}

func TestAppendAllocs(t *testing.T) {
	dst := make([]byte, 0, 4096)
	resp := &GetDataResponse{Data: make([]byte, 1024), Stat: testStat}
	h := ReplyHeader{Xid: 1, Zxid: 2}
	ev := WatcherEvent{Type: EventNodeCreated, State: StateSyncConnected, Path: "/a/b"}
	if n := testing.AllocsPerRun(100, func() { dst = AppendReply(dst[:0], h, resp) }); n != 0 {
		t.Errorf("AppendReply: %v allocs", n)
	}
	if n := testing.AllocsPerRun(100, func() { dst = AppendEvent(dst[:0], ev) }); n != 0 {
		t.Errorf("AppendEvent: %v allocs", n)
	}
	if n := testing.AllocsPerRun(100, func() { FourLetterWord([]byte("hash")) }); n != 0 {
		t.Errorf("FourLetterWord: %v allocs", n)
	}
}

func BenchmarkAppendReplyGetData(b *testing.B) {
	dst := make([]byte, 0, 4096)
	resp := &GetDataResponse{Data: make([]byte, 1024), Stat: testStat}
	h := ReplyHeader{Xid: 1, Zxid: 0x100000001}
	b.ReportAllocs()
	b.SetBytes(int64(len(AppendReply(nil, h, resp))))
	for b.Loop() {
		dst = AppendReply(dst[:0], h, resp)
	}
}

func BenchmarkAppendEvent(b *testing.B) {
	dst := make([]byte, 0, 256)
	ev := WatcherEvent{Type: EventNodeDataChanged, State: StateSyncConnected, Path: "/bench/node-0001"}
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendEvent(dst[:0], ev)
	}
}

// setDataBody is the request body of the paper's workload: a 1 KiB setData.
func setDataBody() []byte {
	return encode(&SetDataRequest{Path: "/bench/node-0001", Data: make([]byte, 1024), Version: -1})
}

// BenchmarkDecodeSetData decodes into a reused record: the path string is the one allocation
// (decoded strings are copies; buffers alias the input).
func BenchmarkDecodeSetData(b *testing.B) {
	body := setDataBody()
	var d Decoder
	var r SetDataRequest
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		d.Reset(body)
		if err := r.Decode(&d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRequestSetData goes through DecodeRequest, which also allocates the record.
func BenchmarkDecodeRequestSetData(b *testing.B) {
	body := setDataBody()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := DecodeRequest(OpSetData, body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadFrame(b *testing.B) {
	frame := AppendFrame(nil, setDataBody())
	rd := bytes.NewReader(nil)
	r := bufio.NewReader(rd)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		rd.Reset(frame)
		r.Reset(rd)
		var err error
		if buf, err = ReadFrame(r, buf, DefaultMaxBuffer); err != nil {
			b.Fatal(err)
		}
	}
}
