//go:build !formatnext

package format

// Supported is the highest level this binary reads and writes.
const Supported = LevelCloseOwner
