package api

import (
	"io"
	"log/slog"

	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricLabelsBounded: made-up methods and paths do not create new
// series (anyone can send them, no token needed).
func TestMetricLabelsBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := NewServer(Deps{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: NewMetrics(reg)})
	for _, m := range []string{"M1", "M2", "BREW", "GET"} {
		for _, path := range []string{"/a", "/b/c"} {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(m, path, nil))
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "kukie_http_requests_total" {
			continue
		}
		labels := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()+"="+l.GetValue()] = true
			}
		}
		for _, want := range []string{"method=OTHER", "method=GET", "route=unmatched"} {
			if !labels[want] {
				t.Errorf("no series with %s: %v", want, labels)
			}
		}
		if n := len(f.GetMetric()); n != 2 {
			t.Errorf("%d series for 8 requests with junk methods and paths, want 2 (GET and OTHER): %v", n, labels)
		}
		return
	}
	t.Fatal("kukie_http_requests_total not exported")
}
