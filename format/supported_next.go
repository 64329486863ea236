//go:build formatnext

package format

// Supported, in a binary built with -tags formatnext, is one level above the newest: a stand-in
// for the next version's binary, which the rolling-upgrade test (tests/fault/upgrade_test.go)
// upgrades an ensemble to. That level adds no encoding, so such a binary writes what any other
// does; it only announces more, which is what the upgrade path has to handle.
const Supported = LevelCloseOwner + 1
