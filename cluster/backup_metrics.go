package cluster

import "github.com/prometheus/client_golang/prometheus"

// backupMetrics count this server's backups and restores (GET /backup, POST /restore).
type backupMetrics struct {
	restores *prometheus.CounterVec
}

func newBackupMetrics(reg prometheus.Registerer) *backupMetrics {
	m := &backupMetrics{
		restores: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "corral_restores_total",
			Help: "POST /restore requests this server handled, by result: done; failed (stopped half-way, what was created stays); refused (nothing written: a bad file, a non-empty ensemble, ...)."},
			[]string{"result"}),
	}
	reg.MustRegister(m.restores)
	return m
}
