// Package apachezk runs real Apache ZooKeeper 3.8 servers, from the Debian
// `zookeeper` package installed on this machine, as child processes on
// loopback ports. It is the reference side of Corral's differential tests and
// the "Apache ZooKeeper" target of the benchmark tool.
//
// What it owns:
//
//   - Finding the installation: [Available] reports why ZooKeeper cannot run
//     (package missing, no java) so that tests fail with a clear message
//     instead of skipping; [Classpath] is what `QuorumPeerMain` needs.
//     Debian's /usr/share/java/zookeeper.jar carries a manifest Class-Path
//     with its runtime dependencies (jute, netty, jetty, jackson, slf4j-api,
//     ...), so the classpath is the per-server config dir (for
//     log4j.properties), zookeeper.jar, and the slf4j → log4j 1.2 binding
//     (slf4j-log4j12.jar, log4j-1.2.jar; both dependencies of
//     libzookeeper-java). Without the binding ZooKeeper silently logs
//     nothing.
//   - Lifecycle of an ensemble ([Start]): N servers (N = 1 is standalone), each
//     with its own directory holding zoo.cfg, data/myid, log4j.properties,
//     zookeeper.log (ZooKeeper's log) and stdout.log (the JVM's own output).
//     Servers are started as
//     `java -Xmx512m <flags> -cp <cp> org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg`
//     and are ready when every running server answers the `srvr` four-letter
//     word with a Mode line and one of them is leader (or standalone).
//   - Fault injection on single servers: [Ensemble.Kill] (SIGKILL),
//     [Ensemble.Stop] (SIGTERM and wait), [Ensemble.Restart].
//
// Invariants: every process started by an Ensemble is stopped and waited for
// by [Ensemble.Close] (which also removes the directories unless
// [Options.KeepDir]); each process has exactly one goroutine, owned by the
// Ensemble, that reaps it. Child JVMs get SIGKILL if the test binary dies
// (Linux parent-death signal), so a crashed test does not leave servers
// holding ports.
//
// Ports are taken from the kernel's ephemeral range on 127.0.0.1 just before
// the JVM starts; if another process grabs one in between, Start notices the
// bind failure in the server log and retries with fresh ports.
//
// Callers: tests in internal/difftest and tests/... (oracle servers), and the
// benchmark tool (bench/) which drives Apache ZooKeeper and Corral with the
// same workload.
package apachezk
