// Package clustertest holds Corral's in-process cluster tests: real servers (cluster.Node)
// talking over loopback, driven by the go-zookeeper client, checking sessions, watches,
// failover and restart. Each test names the guarantee it proves.
package clustertest
