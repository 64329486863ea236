// Package tools holds operator tools: importers, backup, inspection. Each tool is a package
// below tools/ (tools/zkdata reads an Apache ZooKeeper data directory offline); the commands in
// cmd/corral are thin wrappers around them.
package tools
