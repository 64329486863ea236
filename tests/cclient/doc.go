// Package cclient checks that ZooKeeper's C client (cli_mt from Debian's zookeeper-bin) works
// against Corral exactly as against Apache ZooKeeper: the same command script gives the same
// return codes and data on both.
package cclient
