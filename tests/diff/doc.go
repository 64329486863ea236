// Package diffcorral runs the differential suite: the same operation scripts against
// Apache ZooKeeper 3.8 (Debian's package, started by internal/apachezk) and a 3-server Corral
// ensemble, requiring identical observable results (internal/difftest normalises zxids, times
// and session ids).
package diffcorral
