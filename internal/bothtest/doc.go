// Package bothtest starts the two ensembles a differential test compares: Apache ZooKeeper
// (internal/apachezk) and Corral (internal/corralproc), side by side, each stopped when the
// test ends. Tests only.
package bothtest
