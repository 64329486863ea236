package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/corral/corral/format"
	"github.com/corral/corral/session"
)

// formatLevelOnce keeps the ensemble's format level (package format) moving: every server
// announces the level its binary reads when the session table does not hold that yet (first
// start, or a start on another binary), and the meta leader raises the active level once every
// member of every shard announced more (format.Next). Runs every membershipInterval.
func (s *Node) formatLevelOnce() {
	if l, ok := s.table.Announced()[s.cfg.MyID]; !ok || l != format.Supported {
		ctx, cancel := context.WithTimeout(s.ctx, 2*metaAttempt)
		defer cancel()
		if _, err := (metaRaft{s}).Propose(ctx, session.EncodeAnnounce(s.cfg.MyID, format.Supported)); err != nil {
			s.log.Debug("announcing the format level this binary reads failed; retried", "err", err)
			return
		}
		s.log.Info("announced the format level this binary reads", "level", uint32(format.Supported),
			"active", uint32(s.table.Level()))
	}
	if !s.leads(MetaShardID) {
		return
	}
	active, announced := s.table.Level(), s.table.Announced()
	// Only when the announcements alone would allow a raise is the membership read.
	if _, ok := format.Next(active, slices.Collect(maps.Keys(announced)), announced); !ok {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, memberAttempt)
	defer cancel()
	members, err := s.memberIDs(ctx)
	if err != nil {
		s.log.Debug("reading the membership to raise the format level failed; retried", "err", err)
		return
	}
	next, ok := format.Next(active, members, announced)
	if !ok {
		return
	}
	if _, err := (metaRaft{s}).Propose(ctx, session.EncodeSetLevel(next)); err != nil {
		s.log.Warn("raising the format level failed; retried", "to", uint32(next), "err", err)
		return
	}
	s.log.Info("raised the ensemble's format level: every server reads it", "from", uint32(active),
		"to", uint32(next), "servers", fmt.Sprint(members))
}

// memberIDs returns every server that holds a replica of any shard (voting or not), each
// shard's membership read linearizably.
func (s *Node) memberIDs(ctx context.Context) ([]uint64, error) {
	ids := map[uint64]bool{}
	for _, shardID := range s.allShards() {
		m, err := s.shardMembership(ctx, shardID)
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", shardID, err)
		}
		for _, set := range []map[uint64]string{m.Nodes, m.NonVotings, m.Witnesses} {
			for id := range set {
				ids[id] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(ids)), nil
}

// formatLevelText is the format line of GET /members: the active level and each server's
// announcement.
func (s *Node) formatLevelText() string {
	announced := s.table.Announced()
	parts := make([]string, 0, len(announced))
	for _, id := range slices.Sorted(maps.Keys(announced)) {
		parts = append(parts, fmt.Sprintf("%d:%d", id, announced[id]))
	}
	return fmt.Sprintf("format level=%d supported=%s", s.table.Level(), strings.Join(parts, ","))
}
