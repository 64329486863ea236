// Package flw tests Corral's four-letter words (ruok, srvr, mntr and the
// whitelist, 4lw.commands.whitelist) on a 3-process ensemble started from
// zoo.cfg files (internal/corralproc), against what Apache ZooKeeper 3.8.0
// answers with the same whitelist (internal/apachezk).
//
// What is compared exactly: ruok, the refusal of a word outside the
// whitelist ("<word> is not executed because it is not in the whitelist.\n",
// Java's println of NopCommand's message), the empty answer to a word that
// is not a four-letter word, and how zk_znode_count and zk_watch_count in
// mntr change after one create and one watch. What is only checked for
// shape: srvr (go-zookeeper's zk.FLWSrvr must parse it on every server; it
// cannot parse ZooKeeper 3.8's own build-date format) and the presence of
// mntr's zk_server_state, zk_znode_count and zk_watch_count.
//
// Known differences, not asserted: ZooKeeper's node count includes the root
// twice (its DataTree aliases "" and "/"), so a fresh ZooKeeper reports 5
// where Corral reports 4; ZooKeeper prints average latency with Java's
// Double.toString ("0.0"), Corral with four decimals ("0.0000").
package flw
