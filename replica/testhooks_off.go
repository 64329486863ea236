//go:build !corraltesting

package replica

// testHooks are a replica's test-only behaviours: none in a production build (testhooks.go).
type testHooks struct{}

func (*testHooks) afterApply(int) {}
