//go:build !unix

package bench

// openFileLimit cannot tell here.
func openFileLimit() (uint64, bool) { return 0, false }
