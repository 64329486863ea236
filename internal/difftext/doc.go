// Package difftext shows how two texts differ, for test failures that compare transcripts
// (kazoo, zkCli) from Apache ZooKeeper and Corral.
package difftext
