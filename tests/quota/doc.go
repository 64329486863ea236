// Package quota tests ZooKeeper's quotas (/zookeeper/quota, zookeeper.enforceQuota) across
// shards: in a 3-server in-process ensemble (every server's replica holds the same stats, quota
// nodes live with the subtree they count, moves of quota'd subtrees are refused) and against
// Apache ZooKeeper 3.8 (zkCli's setquota, listquota and delquota, and the stats go-zookeeper
// reads after the same writes). Tests only.
package quota
