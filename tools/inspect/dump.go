package inspect

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/corral/corral/shard"
)

// DumpNode is one line of a dump: a znode with its data, ACL and stat. Data is base64 in
// JSON, null for a null znode and "" for an empty one. Zxids and the ephemeral owner are hex
// strings ("0x..."): they exceed what a JSON number holds exactly in most parsers.
type DumpNode struct {
	Path  string    `json:"path"`
	Shard uint64    `json:"shard"`
	Data  []byte    `json:"data"`
	ACL   []DumpACL `json:"acl"`
	Stat  DumpStat  `json:"stat"`
	Kind  string    `json:"kind"` // persistent, ephemeral, container or ttl
	TTL   int64     `json:"ttl,omitempty"`
}

// DumpACL is one ACL entry.
type DumpACL struct {
	Perms  int32  `json:"perms"`
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
}

// DumpStat is ZooKeeper's Stat as a client sees it.
type DumpStat struct {
	Czxid          string `json:"czxid"`
	Mzxid          string `json:"mzxid"`
	Pzxid          string `json:"pzxid"`
	Ctime          int64  `json:"ctime"`
	Mtime          int64  `json:"mtime"`
	Version        int32  `json:"version"`
	Cversion       int32  `json:"cversion"`
	Aversion       int32  `json:"aversion"`
	EphemeralOwner string `json:"ephemeralOwner"`
	DataLength     int32  `json:"dataLength"`
	NumChildren    int32  `json:"numChildren"`
}

func hex(v int64) string { return fmt.Sprintf("0x%x", uint64(v)) }

// Dump writes the subtree at path as JSON lines, one znode a line, streaming from every shard
// store that holds part of it (a subtree lives on one shard unless a deeper path is mounted or
// moved elsewhere): shard by shard in id order, each in path-key order, a node before its
// descendants. It returns the number of znodes written; a path no shard holds is an error.
func Dump(o Options, path string, w io.Writer) (int, error) {
	if path == "" || path[0] != '/' || (len(path) > 1 && strings.HasSuffix(path, "/")) {
		return 0, fmt.Errorf("bad path %q", path)
	}
	l, err := Resolve(o)
	if err != nil {
		return 0, err
	}
	if err := l.CheckStopped(); err != nil {
		return 0, err
	}
	ids, err := l.ShardIDs()
	if err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, fmt.Errorf("%s: no shard stores", l.ShardsDir)
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	count := 0
	for _, id := range ids {
		st, err := l.openStore(id)
		if err != nil {
			return count, err
		}
		err = st.r.Walk(path, func(p string, n shard.NodeInfo) error {
			count++
			return enc.Encode(dumpNode(id, p, n))
		})
		st.Close()
		if err != nil {
			return count, err
		}
	}
	if err := bw.Flush(); err != nil {
		return count, err
	}
	if count == 0 {
		return 0, fmt.Errorf("%s: no such znode on any shard", path)
	}
	return count, nil
}

func dumpNode(shardID uint64, path string, n shard.NodeInfo) DumpNode {
	st := n.Stat()
	d := DumpNode{Path: path, Shard: shardID, Data: n.Data(), ACL: []DumpACL{}, Kind: n.Kind(), TTL: n.TTL(),
		Stat: DumpStat{Czxid: hex(st.Czxid), Mzxid: hex(st.Mzxid), Pzxid: hex(st.Pzxid), Ctime: st.Ctime, Mtime: st.Mtime,
			Version: st.Version, Cversion: st.Cversion, Aversion: st.Aversion, EphemeralOwner: hex(st.EphemeralOwner),
			DataLength: st.DataLength, NumChildren: st.NumChildren}}
	for _, a := range n.ACL() {
		d.ACL = append(d.ACL, DumpACL{Perms: a.Perms, Scheme: a.ID.Scheme, ID: a.ID.ID})
	}
	return d
}
