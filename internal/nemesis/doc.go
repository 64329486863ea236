// Package nemesis injects network faults between the server processes of a fault test on one
// machine: it cuts a server's Raft traffic with iptables rules on the loopback interface
// (Isolate: from all its peers, in one direction or both; Cut: between two servers only) and
// removes them again.
//
// All servers listen on 127.0.0.1, so addresses cannot tell them apart. A server to be cut off
// runs under its own user id (internal/corralproc Options.ServerUID): its outgoing packets are
// matched with iptables' owner match, packets to and from its Raft port by that port. Every
// rule carries a comment naming this package and the test process's pid; Heal deletes the
// rules it added, and Sweep deletes those left behind by test processes that no longer run
// (a test killed before it could heal). Nothing outside the loopback interface is touched.
//
// It needs root and the iptables command; Available says whether both are there.
package nemesis
