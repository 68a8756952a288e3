package api

import (
	"fmt"
	"net/http"
	"testing"
)

// BenchmarkPlanListHTTP measures GET /v1/plans (a page of 50) through the
// whole stack: HTTP, JWT check, Postgres, JSON.
func BenchmarkPlanListHTTP(b *testing.B) {
	a := newBenchAPI(b)
	agent := benchToken(b, "agent")
	member := benchToken(b, "member")
	for i := range 200 {
		body := planBody("shared")
		body["command"] = fmt.Sprintf("kubectl scale --replicas=%d", i)
		if res := a.post(b, "/v1/plans", agent, body); res != http.StatusCreated {
			b.Fatalf("seed: %d", res)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if status := a.get(b, "/v1/plans", member); status != 200 {
			b.Fatalf("list: %d", status)
		}
	}
}
