//go:build !corraltesting

package router

// The router's test-only behaviours: none in a production build (testhooks.go).
type (
	shardTestHooks struct{}
	txnTestHooks   struct{}
)

func (*shardTestHooks) beforePublish(int) {}
func (*txnTestHooks) at(string)           {}
