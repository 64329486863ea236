//go:build !corraltesting

package shard

// testHooks are a replica's test-only behaviours: none in a production build (testhooks.go).
type testHooks struct{}

func (*testHooks) afterApply(int) {}
