package corralproc

import (
	"fmt"
	"strings"
	"testing"
)

// TestLogExcerptShowsWhyItPanicked: a log that ends in a Go stack dump is excerpted from before
// the dump, so the panic's message is shown, not 25 lines of frames; other logs by their tail.
func TestLogExcerptShowsWhyItPanicked(t *testing.T) {
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "log line %d\n", i)
	}
	b.WriteString("panic: snapshot flag file: unexpected EOF\n\n")
	for i := range 3 {
		fmt.Fprintf(&b, "goroutine %d [running]:\n", i+1)
		for j := range 20 {
			fmt.Fprintf(&b, "frame %d.%d\n\tfile.go:%d\n", i, j, j)
		}
	}
	got := logExcerpt("s3/server.log", []byte(b.String()))
	for _, want := range []string{"panic: snapshot flag file: unexpected EOF", "log line 39", "goroutine 1 [running]:", "frame 0.0"} {
		if !strings.Contains(got, want) {
			t.Errorf("excerpt lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "goroutine 2") || strings.Contains(got, "log line 10\n") {
		t.Errorf("excerpt too long:\n%s", got)
	}
	plain := logExcerpt("s1/server.log", []byte(b.String()[:strings.Index(b.String(), "panic:")]))
	if !strings.HasPrefix(plain, "--- tail of s1/server.log ---") || !strings.Contains(plain, "log line 39") || strings.Contains(plain, "log line 14\n") {
		t.Errorf("plain excerpt:\n%s", plain)
	}
}
