package difftext

import (
	"strings"
	"testing"
)

func TestUnifiedShowsTheChangedLine(t *testing.T) {
	d := Unified(t, "zookeeper", "a\nb\nc\n", "corral", "a\nB\nc\n")
	for _, want := range []string{"-b", "+B", "zookeeper", "corral"} {
		if !strings.Contains(d, want) {
			t.Fatalf("diff lacks %q:\n%s", want, d)
		}
	}
}
