package cluster

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral/corral/router"
)

// backupMetrics count this server's backups and restores (GET /backup, POST /restore) and
// time their cuts. Every label value is created at registration, so each series exists from
// the first scrape.
type backupMetrics struct {
	backups     *prometheus.CounterVec // result: sent, no_cut, stopped
	cutAttempts prometheus.Counter
	cutStall    prometheus.Histogram
	restores    *prometheus.CounterVec // result: done, failed, refused
}

func newBackupMetrics(reg prometheus.Registerer) *backupMetrics {
	m := &backupMetrics{
		backups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "corral_backups_total",
			Help: "GET /backup requests this server took a cut for (past the format-level check), by result: sent (the whole file); no_cut (no consistent cut within 30 s, 503); stopped (the cut was taken, sending stopped: the client's file has no trailer)."},
			[]string{"result"}),
		cutAttempts: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_backup_cut_attempts_total",
			Help: "Cuts this server tried to take for backups, the ones that met another cross-shard transaction (busy, tried again) included."}),
		cutStall: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "corral_backup_cut_stall_seconds",
			Help:    "How long each cut taken for a backup held every data shard's writes (from the first prepare to the last abort).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		restores: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "corral_restores_total",
			Help: "POST /restore requests this server handled (past the authorisation and format-level checks), by result: done; failed (stopped half-way, what was created stays); refused (nothing written: a bad file, a non-empty ensemble, ...)."},
			[]string{"result"}),
	}
	for _, r := range []string{"sent", "no_cut", "stopped"} {
		m.backups.WithLabelValues(r)
	}
	for _, r := range []string{"done", "failed", "refused"} {
		m.restores.WithLabelValues(r)
	}
	reg.MustRegister(m.backups, m.cutAttempts, m.cutStall, m.restores)
	return m
}

// cut records one TakeCut of GET /backup.
func (m *backupMetrics) cut(st router.CutStats, err error) {
	m.cutAttempts.Add(float64(st.Attempts))
	if err != nil {
		m.backups.WithLabelValues("no_cut").Inc()
		return
	}
	m.cutStall.Observe(st.Held.Seconds())
}

// sent records the end of sending a backup.
func (m *backupMetrics) sent(err error) {
	if err != nil {
		m.backups.WithLabelValues("stopped").Inc()
	} else {
		m.backups.WithLabelValues("sent").Inc()
	}
}
