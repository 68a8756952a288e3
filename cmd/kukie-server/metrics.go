package main

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukie/gitops-server/service"
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
			Help: "Argo CD snapshot cache lookups by result: hit; miss or refresh (this replica read the cluster); shared_hit, shared_wait (another replica read it); shared_error (the shared table failed).",
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

// registerSnapshotCacheMetrics exports the local snapshot cache's size and
// evictions by reason (capacity: KUKIE_CACHE_MAX_CLUSTERS; memory: the
// memory guard).
func registerSnapshotCacheMetrics(reg prometheus.Registerer, cache *service.SnapshotCache) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kukie_snapshot_cache_entries",
		Help: "Clusters whose Argo CD snapshot this replica caches."}, func() float64 { return float64(cache.Entries()) }))
	for _, reason := range []string{service.EvictCapacity, service.EvictMemory} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kukie_snapshot_cache_evictions_total",
			Help:        "Snapshots that left this replica's cache before their time, by reason.",
			ConstLabels: prometheus.Labels{"reason": reason}}, func() float64 { return float64(cache.Evictions(reason)) }))
	}
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

// switchMetrics counts level switches, disconnections and SNS deliveries
// (service.SwitchMetrics and service.WebhookMetrics).
type switchMetrics struct {
	switches     *prometheus.CounterVec
	disconnected *prometheus.CounterVec
	sns          *prometheus.CounterVec
}

func newSwitchMetrics(reg prometheus.Registerer) *switchMetrics {
	m := &switchMetrics{
		switches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kukie_access_switches_total",
			Help: "Level switches of EKS clusters by outcome: ok, retry, degraded, upgrade_failed, namespace_not_allowed, revocation_failed (alert on it).",
		}, []string{"outcome"}),
		disconnected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kukie_aws_accounts_disconnected_total",
			Help: "AWS accounts that stopped receiving stack notifications, by why: unsubscribed, stack_deleted.",
		}, []string{"why"}),
		sns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kukie_sns_messages_total",
			Help: "SNS deliveries to the webhook by verdict (accepted, duplicate, ignored, confirming, deferred, disconnected, malformed, rejected, transient) and reason.",
		}, []string{"verdict", "reason"}),
	}
	reg.MustRegister(m.switches, m.disconnected, m.sns)
	return m
}

func (m *switchMetrics) Switch(outcome string)          { m.switches.WithLabelValues(outcome).Inc() }
func (m *switchMetrics) AccountDisconnected(why string) { m.disconnected.WithLabelValues(why).Inc() }
func (m *switchMetrics) SNSMessage(verdict, reason string) {
	m.sns.WithLabelValues(verdict, reason).Inc()
}

// dbGauges exports counts read from the database at scrape time: clusters
// by access state and the job backlog. A scrape that cannot read them
// exports nothing for them (the pool metrics show why).
type dbGauges struct {
	db       *store.DB
	clusters *prometheus.Desc
	backlog  *prometheus.Desc
}

func registerDBGauges(reg prometheus.Registerer, db *store.DB) {
	reg.MustRegister(&dbGauges{db: db,
		clusters: prometheus.NewDesc("kukie_clusters_by_access_state", "EKS clusters by access_state.", []string{"access_state"}, nil),
		backlog: prometheus.NewDesc("kukie_job_backlog", "Jobs not finished yet, by kind and state.",
			[]string{"kind", "state"}, nil),
	})
}

func (g *dbGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.clusters
	ch <- g.backlog
}

func (g *dbGauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if counts, err := g.db.ClustersByAccessState(ctx); err == nil {
		for state, n := range counts {
			ch <- prometheus.MustNewConstMetric(g.clusters, prometheus.GaugeValue, float64(n), state)
		}
	}
	if counts, err := g.db.JobBacklog(ctx); err == nil {
		for key, n := range counts {
			kind, state, _ := strings.Cut(key, "/")
			ch <- prometheus.MustNewConstMetric(g.backlog, prometheus.GaugeValue, float64(n), kind, state)
		}
	}
}

// newPreviewMetrics counts the revert preview's fields by their state in
// Git: set, unset, pending, unavailable.
func newPreviewMetrics(reg prometheus.Registerer) func(state string) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kukie_preview_total",
		Help: "Changed fields of managed resources by what the revert preview found in Git: set, unset, pending (not known within the detection budget), unavailable (a reason on the field).",
	}, []string{"state"})
	reg.MustRegister(c)
	return func(state string) { c.WithLabelValues(state).Inc() }
}

// newAccessReviewMetrics counts access reviews (can-i and the per-target
// access of detection on limited clusters) by outcome.
func newAccessReviewMetrics(reg prometheus.Registerer) func(outcome string) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kukie_access_reviews_total",
		Help: "Access reviews of Kukie's own connection by outcome: allowed, denied, error (the review failed), cached (answered from the 10-second cache).",
	}, []string{"outcome"})
	reg.MustRegister(c)
	return func(outcome string) { c.WithLabelValues(outcome).Inc() }
}
