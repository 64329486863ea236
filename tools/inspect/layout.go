package inspect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/corral/corral/cluster"
)

// Options name what to inspect: DataDir directly, or Config, a zoo.cfg whose dataDir and
// dataLogDir are used (DataDir then overrides its dataDir when both are given).
type Options struct {
	DataDir    string
	DataLogDir string
	Config     string
}

// Layout is where a server's data lives (docs/storage.md).
type Layout struct {
	DataDir     string
	DataLogDir  string // "" when the Raft log is under DataDir
	MyID        uint64 // 0 when there is no myid file (a standalone server uses 1)
	NodeHostDir string // <dataDir>/corral/nodehost
	ShardsDir   string // <dataDir>/corral/shards
	cfg         *cluster.Config
}

// ErrNotDataDir marks a directory that holds no Corral data.
var ErrNotDataDir = errors.New("not a Corral data directory")

// Resolve finds the data directory's parts and checks that they exist.
func Resolve(o Options) (*Layout, error) {
	l := &Layout{DataDir: o.DataDir, DataLogDir: o.DataLogDir}
	if o.Config != "" {
		f, err := os.Open(o.Config)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		cfg, err := cluster.ParseConfig(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("config %s: %w", o.Config, err)
		}
		rel := func(p string) string {
			if p != "" && !filepath.IsAbs(p) {
				return filepath.Join(filepath.Dir(o.Config), p)
			}
			return p
		}
		if l.DataDir == "" {
			l.DataDir = rel(cfg.DataDir)
		}
		if l.DataLogDir == "" {
			l.DataLogDir = rel(cfg.DataLogDir)
		}
		if l.DataDir == "" {
			return nil, fmt.Errorf("config %s: no dataDir", o.Config)
		}
		l.cfg = &cfg
	}
	if l.DataDir == "" {
		return nil, errors.New("no data directory given")
	}
	st, err := os.Stat(l.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("data directory %s: not a directory", l.DataDir)
	}
	l.NodeHostDir = filepath.Join(l.DataDir, "corral", "nodehost")
	l.ShardsDir = filepath.Join(l.DataDir, "corral", "shards")
	if _, err := os.Stat(l.NodeHostDir); err != nil {
		if _, err2 := os.Stat(l.ShardsDir); err2 != nil {
			return nil, fmt.Errorf("%s: %w (no corral/nodehost nor corral/shards below it; is it the dataDir of zoo.cfg?)", l.DataDir, ErrNotDataDir)
		}
	}
	if l.DataLogDir != "" {
		if _, err := os.Stat(l.DataLogDir); err != nil {
			return nil, fmt.Errorf("data log directory: %w", err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(l.DataDir, "myid")); err == nil {
		id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: myid %q is not a number", filepath.Join(l.DataDir, "myid"), strings.TrimSpace(string(b)))
		}
		l.MyID = id
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("myid: %w", err)
	}
	return l, nil
}

// ShardIDs returns the ids of the shard stores under ShardsDir, ascending.
func (l *Layout) ShardIDs() ([]uint64, error) {
	ents, err := os.ReadDir(l.ShardsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("shards: %w", err)
	}
	var ids []uint64
	for _, e := range ents {
		if id, err := strconv.ParseUint(e.Name(), 10, 64); err == nil && e.IsDir() {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// ShardDir returns the replica directory of shard id.
func (l *Layout) ShardDir(id uint64) string {
	return filepath.Join(l.ShardsDir, strconv.FormatUint(id, 10))
}
