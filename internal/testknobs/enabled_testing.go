//go:build corraltesting

package testknobs

// Enabled reports whether this binary was built with -tags corraltesting and so reads the
// knobs from its environment.
const Enabled = true
