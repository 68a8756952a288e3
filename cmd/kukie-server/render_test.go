package main

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kukie/gitops-server/internal/render"
	"github.com/kukie/gitops-server/service"
)

// Each child's memory is its share of the container beside GOMEMLIMIT;
// start-up refuses a share below the minimum with one line naming the
// settings.
func TestRenderChildLimits(t *testing.T) {
	const gib = 1 << 30
	limit := func(n uint64) func() (uint64, error) { return func() (uint64, error) { return n, nil } }
	failing := func(err error) func() (uint64, error) { return func() (uint64, error) { return 0, err } }
	tests := []struct {
		name        string
		concurrency int
		container   func() (uint64, error)
		goMemLimit  int64
		want        int64
		wantErr     bool
	}{
		{"ProductionDeployment", 2, limit(2 * gib), gib, 512 << 20, false},
		{"NoContainerLimit", 4, failing(memlimit.ErrNoLimit), math.MaxInt64, render.DefaultChildMemoryBytes, false},
		{"NoCgroup", 4, failing(memlimit.ErrNoCgroup), math.MaxInt64, render.DefaultChildMemoryBytes, false},
		{"AutomemlimitDefaultsLeaveTooLittle", 2, limit(gib), gib * 9 / 10, 0, true},
		{"TooManyRenders", 8, limit(2 * gib), gib, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config{RenderConcurrency: tt.concurrency, RenderTimeout: time.Minute}
			got, err := renderChildLimits(cfg, tt.container, tt.goMemLimit)
			if (err != nil) != tt.wantErr || got.MaxMemoryBytes != tt.want {
				t.Fatalf("limits %+v, %v; want memory %d (error %v)", got, err, tt.want, tt.wantErr)
			}
			if err != nil {
				msg := err.Error()
				if strings.Contains(msg, "\n") || !strings.Contains(msg, "KUKIE_RENDER_CONCURRENCY") || !strings.Contains(msg, "GOMEMLIMIT") {
					t.Errorf("start-up line %q must be one line naming KUKIE_RENDER_CONCURRENCY and GOMEMLIMIT", msg)
				}
				return
			}
			if got.Timeout != time.Minute || got.MaxOutputBytes != renderMaxOutput {
				t.Errorf("limits %+v", got)
			}
		})
	}
}

// gathered returns the value of one series of reg: a gauge's or counter's
// value, a histogram's sample count.
func gathered(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label != "" && !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == label && l.GetValue() == value }) {
				continue
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	t.Fatalf("%s{%s=%q} is not exported", name, label, value)
	return 0
}

// The queue's metrics move: in flight, waits and rejections by reason.
func TestRenderMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	fired := make(chan time.Time, 1)
	q := service.NewRenderQueue(1, time.Second, service.RenderQueueOptions{Metrics: newRenderMetrics(reg),
		Timer: func(time.Duration) (<-chan time.Time, func() bool) { return fired, func() bool { return true } }})
	if got := gathered(t, reg, "kukie_render_rejected_total", "reason", "queue_timeout"); got != 0 {
		t.Errorf("rejected before any render = %v", got)
	}
	release, err := q.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := gathered(t, reg, "kukie_renders_in_flight", "", ""); got != 1 {
		t.Errorf("kukie_renders_in_flight = %v, want 1", got)
	}
	fired <- time.Time{}
	if _, err := q.Acquire(context.Background(), "b"); service.ErrorReason(err) != service.ReasonRenderBusy {
		t.Fatalf("second Acquire = %v, want render_busy", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := q.Acquire(ctx, "c"); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled Acquire = %v", err)
	}
	release()
	if got := gathered(t, reg, "kukie_renders_in_flight", "", ""); got != 0 {
		t.Errorf("kukie_renders_in_flight = %v after release, want 0", got)
	}
	for _, reason := range []string{"queue_timeout", "canceled"} {
		if got := gathered(t, reg, "kukie_render_rejected_total", "reason", reason); got != 1 {
			t.Errorf("kukie_render_rejected_total{reason=%q} = %v, want 1", reason, got)
		}
	}
	if got := gathered(t, reg, "kukie_render_queue_wait_seconds", "", ""); got != 1 {
		t.Errorf("kukie_render_queue_wait_seconds count = %v, want 1 (the admitted render)", got)
	}
}
