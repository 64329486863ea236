//go:build !corraltesting

package testcluster

import (
	"testing"
	"time"

	"github.com/corral/corral/router"
)

// needsHooks skips a test that needs the in-process test hooks, which only a corraltesting
// build has (`make test` builds with -tags corraltesting).
func needsHooks(t testing.TB, what string) {
	t.Helper()
	t.Skipf("%s is a test hook of corraltesting builds: run with -tags corraltesting (make test does)", what)
}

// SetApplyLag skips the test: see hooks.go.
func SetApplyLag(t testing.TB, _ *router.Shard, _ time.Duration) {
	t.Helper()
	needsHooks(t, "an in-process replica's apply lag")
}

// SetTxnHook skips the test: see hooks.go.
func SetTxnHook(t testing.TB, _ *router.Router, _ func(string)) {
	t.Helper()
	needsHooks(t, "a transaction step hook")
}
