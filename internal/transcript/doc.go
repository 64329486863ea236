// Package transcript runs command transcripts for tests, in the style of etcd-io/raft's
// datadriven tests: a file holds cases, each one or more input lines, a "----" line and the
// expected output up to a blank line; comment lines (#) and blank lines between cases are kept.
// A test gives Run (or RunDir, for every testdata/*.txt file) a function from a case's input
// lines to its output lines; with the test binary's -rewrite flag, Run writes the actual output
// back into the file instead of comparing. It owns no goroutines.
package transcript
