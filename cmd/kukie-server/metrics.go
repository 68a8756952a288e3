package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukie/gitops-server/store"
)

// clusterMetrics counts snapshot cache events and cluster LIST calls.
type clusterMetrics struct {
	cache    *prometheus.CounterVec
	lists    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newClusterMetrics(reg prometheus.Registerer) *clusterMetrics {
	m := &clusterMetrics{
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kukie_argocd_cache_events_total",
			Help: "Argo CD snapshot cache lookups by result: hit, miss, refresh.",
		}, []string{"event"}),
		lists: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kukie_cluster_list_calls_total",
			Help: "Reads of Argo CD Applications from clusters, by outcome (ok or a failure reason).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kukie_cluster_list_duration_seconds",
			Help:    "Time to read a cluster's Argo CD Applications, by outcome.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"outcome"}),
	}
	reg.MustRegister(m.cache, m.lists, m.duration)
	return m
}

func (m *clusterMetrics) CacheEvent(event string) { m.cache.WithLabelValues(event).Inc() }

func (m *clusterMetrics) ObserveList(outcome string, d time.Duration) {
	m.lists.WithLabelValues(outcome).Inc()
	m.duration.WithLabelValues(outcome).Observe(d.Seconds())
}

// registerPoolMetrics exports the database pool's state.
func registerPoolMetrics(reg prometheus.Registerer, db *store.DB) {
	gauge := func(name, help string, value func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, value))
	}
	gauge("kukie_db_pool_acquired_connections", "Database connections in use.",
		func() float64 { return float64(db.Stat().AcquiredConns()) })
	gauge("kukie_db_pool_idle_connections", "Idle database connections.",
		func() float64 { return float64(db.Stat().IdleConns()) })
	gauge("kukie_db_pool_total_connections", "Open database connections.",
		func() float64 { return float64(db.Stat().TotalConns()) })
}
