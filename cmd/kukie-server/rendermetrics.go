package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukie/gitops-server/service"
)

var _ service.RenderQueueMetrics = (*renderMetrics)(nil)

// renderMetrics exports the render queue (service.RenderQueueMetrics).
type renderMetrics struct {
	inFlight prometheus.Gauge
	wait     prometheus.Histogram
	rejected *prometheus.CounterVec
}

func newRenderMetrics(reg prometheus.Registerer) *renderMetrics {
	m := &renderMetrics{
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kukie_renders_in_flight",
			Help: "Renders running in this replica (render slots held, at most KUKIE_RENDER_CONCURRENCY).",
		}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kukie_render_queue_wait_seconds",
			Help:    "Time an admitted render waited for its slot.",
			Buckets: []float64{.001, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kukie_render_rejected_total",
			Help: "Renders that left the queue without a slot, by reason: queue_timeout (answered render_busy), canceled.",
		}, []string{"reason"}),
	}
	for _, reason := range []string{service.RenderRejectedTimeout, service.RenderRejectedCanceled} {
		m.rejected.WithLabelValues(reason)
	}
	reg.MustRegister(m.inFlight, m.wait, m.rejected)
	return m
}

func (m *renderMetrics) RendersInFlight(n int)          { m.inFlight.Set(float64(n)) }
func (m *renderMetrics) RenderAdmitted(d time.Duration) { m.wait.Observe(d.Seconds()) }
func (m *renderMetrics) RenderRejected(reason string)   { m.rejected.WithLabelValues(reason).Inc() }
