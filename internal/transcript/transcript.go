package transcript

import (
	"bufio"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rewrite is the -rewrite flag of a test binary that runs transcripts.
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt transcripts")

// Rewriting reports whether the test binary runs with -rewrite: tests that generate other
// files under testdata (fuzz seeds) regenerate them then too.
func Rewriting() bool { return *rewrite }

// RunDir runs every testdata/*.txt file of the test's package as a subtest named after the
// file, each case through the runner newRunner returns for the file (Run).
func RunDir(t *testing.T, newRunner func(t *testing.T) func(input []string) []string) {
	t.Helper()
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			Run(t, file, newRunner(t))
		})
	}
}

// tcase is one case of a transcript file.
type tcase struct {
	pre    []string // comments and blank lines before the case
	input  []string
	output []string
	line   int
}

// parse reads a transcript file into its cases and the comment lines after the last one.
func parse(t testing.TB, file string) (cases []tcase, tail []string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var cur tcase
	state := 0 // 0: between cases, 1: input, 2: output
	ln := 0
	for sc.Scan() {
		ln++
		l := sc.Text()
		switch state {
		case 0:
			if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
				cur.pre = append(cur.pre, l)
				continue
			}
			cur.input, cur.line, state = []string{l}, ln, 1
		case 1:
			if l == "----" {
				state = 2
				continue
			}
			cur.input = append(cur.input, l)
		case 2:
			if strings.TrimSpace(l) == "" {
				cases = append(cases, cur)
				cur, state = tcase{}, 0
				continue
			}
			cur.output = append(cur.output, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	switch state {
	case 1:
		t.Fatalf("%s:%d: case without ----", file, cur.line)
	case 2:
		cases = append(cases, cur)
		cur = tcase{}
	}
	return cases, cur.pre
}

// Run runs every case of file through run, in order, and reports each case whose output differs
// from the file's; with -rewrite it writes the actual outputs back into the file instead.
func Run(t testing.TB, file string, run func(input []string) []string) {
	t.Helper()
	cases, tail := parse(t, file)
	var out strings.Builder
	for i := range cases {
		c := &cases[i]
		got := run(c.input)
		for _, l := range c.pre {
			out.WriteString(l + "\n")
		}
		for _, l := range c.input {
			out.WriteString(l + "\n")
		}
		out.WriteString("----\n")
		for _, l := range got {
			out.WriteString(l + "\n")
		}
		out.WriteString("\n")
		if !*rewrite && strings.Join(got, "\n") != strings.Join(c.output, "\n") {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", file, c.line, strings.Join(c.input, " | "),
				strings.Join(got, "\n"), strings.Join(c.output, "\n"))
		}
	}
	for _, l := range tail {
		out.WriteString(l + "\n")
	}
	if *rewrite {
		s := strings.TrimRight(out.String(), "\n") + "\n"
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
