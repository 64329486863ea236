// Package zktest opens go-zookeeper sessions for tests against Apache ZooKeeper or Corral.
package zktest
