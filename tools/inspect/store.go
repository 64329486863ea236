package inspect

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/corral/corral/replica"
	"github.com/corral/corral/shard"
)

// store is one shard replica's pebble store, opened read-only.
type store struct {
	id   uint64
	dir  string // the pebble directory
	db   *pebble.DB
	r    *shard.StoreReader
	info shard.StoreInfo
}

// openStore opens shard id's store read-only and reads its info. The caller closes it.
func (l *Layout) openStore(id uint64) (*store, error) {
	dir, err := replica.StoreDBDir(l.ShardDir(id))
	if err != nil {
		return nil, fmt.Errorf("shard %d: %w", id, err)
	}
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, FS: readOnlyFS{vfs.Default}, Logger: quietLogger{}})
	if err != nil {
		if errors.Is(err, ErrRunning) {
			return nil, err
		}
		return nil, fmt.Errorf("shard %d: opening %s: %w", id, dir, err)
	}
	s := &store{id: id, dir: dir, db: db, r: replica.NewStoreReader(db)}
	if s.info, err = s.r.Info(); err != nil {
		db.Close()
		return nil, fmt.Errorf("shard %d (%s): %w", id, dir, err)
	}
	return s, nil
}

func (s *store) Close() error { return s.db.Close() }

// quietLogger drops pebble's informational messages; a fatal one panics, as pebble requires.
type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{}) {}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	panic(fmt.Sprintf("inspect: pebble: "+format, args...))
}
