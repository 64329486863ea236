// Command corral runs Corral servers and its tools.
//
//	corral server --config zoo.cfg     run one server from a ZooKeeper-style configuration
//	corral local [--servers 3] ...      run a local ensemble, one process per server
//	corral bench <experiment> ...       benchmarks against Corral and Apache ZooKeeper
//	corral members list|add|remove ...  add or remove servers online (docs/operations.md)
//	corral move /path shard-id|new      move a subtree to another (or a new) data shard online
//	corral shards list|add ...          list the data shards, add one online
//	corral import --from|--zk-datadir   copy a ZooKeeper tree (data, ACLs, stats) into Corral
//	corral backup --admin H --out FILE  write one consistent cut of the whole namespace to a file
//	corral restore --admin H --in FILE  load a backup into an empty ensemble (POST /restore)
//	corral inspect DIR [--dump /path]   look into a stopped server's data directory (read-only)
//	corral version
//
// A binary built with -tags corraltesting (`make build-testing`: bin/corral-testing) also reads
// test knobs from its environment (package internal/testknobs) and says so in `corral version`;
// tests and `corral bench shards --delay` use it, production never does. One built with -tags
// nobench (the container image, `make image`) leaves the benchmark suite and its plotting out
// (8 MB less); its `corral bench` says so and exits 2.
//
// `corral server` owns the process's garbage-collector target: unless GOGC is set, it follows
// the live heap (gcpace.go; docs/operations.md, "Memory").
//
// See README.md for the two commands a newcomer needs and docs/operations.md for configuration.
package main
