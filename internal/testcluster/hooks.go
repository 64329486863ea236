//go:build corraltesting

package testcluster

import (
	"testing"
	"time"

	"github.com/corral/corral/router"
)

// SetApplyLag makes server's replica of sh hold back every apply that changes something by d
// (router.Shard.SetApplyLag, a hook of corraltesting builds; without the tag the test is
// skipped, hooks_off.go).
func SetApplyLag(t testing.TB, sh *router.Shard, d time.Duration) {
	t.Helper()
	sh.SetApplyLag(d)
}

// SetTxnHook installs f at the steps of every transaction r coordinates (router.SetTxnHook, a
// hook of corraltesting builds; without the tag the test is skipped).
func SetTxnHook(t testing.TB, r *router.Router, f func(step string)) {
	t.Helper()
	r.SetTxnHook(f)
}
