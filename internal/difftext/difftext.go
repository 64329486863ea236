package difftext

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Unified returns `diff -u` of a and b, labelled with their names; if diff cannot run, both
// texts in full.
func Unified(t testing.TB, aName, a, bName, b string) string {
	t.Helper()
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, aName), filepath.Join(dir, bName)
	if err := os.WriteFile(pa, []byte(a), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pb, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("diff", "-u", pa, pb).Output()
	if len(out) == 0 {
		msg := "no output"
		if err != nil {
			msg = err.Error()
		}
		return "(diff failed: " + msg + ")\n--- " + aName + "\n" + a + "\n+++ " + bName + "\n" + b
	}
	return string(out)
}
