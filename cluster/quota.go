package cluster

import (
	"strings"

	"github.com/corral/corral/format"
	"github.com/corral/corral/shard"
)

// loadEnforceQuota applies -Dzookeeper.enforceQuota from SERVER_JVMFLAGS (what zkServer.sh
// passes to Java) unless zoo.cfg set enforceQuota: ZooKeeper copies zoo.cfg's unknown keys into
// "zookeeper."-prefixed system properties after the JVM started, so zoo.cfg wins.
func (c *Config) loadEnforceQuota(jvmFlags string) {
	if c.enforceQuotaSet {
		return
	}
	for _, a := range strings.Fields(jvmFlags) {
		if v, ok := strings.CutPrefix(a, "-Dzookeeper.enforceQuota="); ok {
			c.EnforceQuota = strings.EqualFold(strings.Trim(v, `"'`), "true")
		}
	}
}

// quotaMode is how this server's writes treat quotas (docs/design.md "Quotas"): not at all
// until the ensemble reached format.LevelQuota (a replica on an older binary would not count,
// and the stats would differ between replicas), then counted, and enforced when
// zookeeper.enforceQuota is set here. The router places /zookeeper/quota/<p> with <p> from the
// same moment.
func (s *Node) quotaMode() shard.QuotaMode {
	if s.table == nil || s.table.Level() < format.LevelQuota {
		return shard.QuotaOff
	}
	if s.cfg.EnforceQuota {
		return shard.QuotaEnforce
	}
	return shard.QuotaCount
}
