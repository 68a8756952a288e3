package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// routeStats are one route's requests: latencies (and when each ended,
// from the start of the load), 4xx answers, failures (no answer, or
// neither 2xx nor 4xx, or a 2xx the client could not use) and a few
// examples of each.
type routeStats struct {
	latencies      []time.Duration
	ended          []time.Duration
	client4xx      int64
	errors         int64
	skipped        int64 // 2xx answers whose detection could not finish (ownership, approve)
	samples4xx     []string
	samplesFailure []string
}

const maxSamples = 5

func (s *routeStats) add(ended, took time.Duration, status int, failure string) {
	s.latencies, s.ended = append(s.latencies, took), append(s.ended, ended)
	switch {
	case failure == "":
	case status >= 400 && status < 500:
		s.client4xx++
		if len(s.samples4xx) < maxSamples {
			s.samples4xx = append(s.samples4xx, failure)
		}
	default:
		s.errors++
		if len(s.samplesFailure) < maxSamples {
			s.samplesFailure = append(s.samplesFailure, failure)
		}
	}
}

func (s *routeStats) merge(o *routeStats) {
	s.latencies, s.ended = append(s.latencies, o.latencies...), append(s.ended, o.ended...)
	s.client4xx += o.client4xx
	s.errors += o.errors
	s.skipped += o.skipped
	s.samples4xx = append(s.samples4xx, o.samples4xx...)[:min(maxSamples, len(s.samples4xx)+len(o.samples4xx))]
	s.samplesFailure = append(s.samplesFailure, o.samplesFailure...)[:min(maxSamples, len(s.samplesFailure)+len(o.samplesFailure))]
}

// soakResult is every route's stats, in the mix's route order.
type soakResult struct {
	routes  []string
	stats   map[string]*routeStats
	elapsed time.Duration
}

func (r soakResult) total() routeStats {
	var t routeStats
	for _, name := range r.routes {
		t.merge(r.stats[name])
	}
	return t
}

func (r soakResult) print() {
	fmt.Printf("\n| Route | Requests | 4xx | Non-4xx errors | p50 | p99 | max |\n|---|---|---|---|---|---|---|\n")
	row := func(name string, s *routeStats) {
		fmt.Printf("| %s | %d | %d | %d | %s | %s | %s |\n", name, len(s.latencies), s.client4xx, s.errors,
			pct(s.latencies, 50), pct(s.latencies, 99), pct(s.latencies, 100))
	}
	for _, name := range r.routes {
		row(name, r.stats[name])
	}
	t := r.total()
	row(fmt.Sprintf("**All** (%.0f req/s over %s)", float64(len(t.latencies))/r.elapsed.Seconds(),
		r.elapsed.Round(time.Second)), &t)
	fmt.Printf("\nDetections that could not finish (not errors: the answer says so): ownership answers with `skipped` %d of %d; "+
		"approvals whose re-detection was incomplete (`recheck_skipped`) %d of %d.\n",
		r.stats[routeOwnership].skipped, len(r.stats[routeOwnership].latencies), r.stats[routeApprove].skipped, len(r.stats[routeApprove].latencies))
}

// failures lists the examples of 4xx answers and failures, per route.
func (r soakResult) failures() string {
	var b strings.Builder
	for _, name := range r.routes {
		s := r.stats[name]
		for _, f := range slices.Concat(s.samplesFailure, s.samples4xx) {
			fmt.Fprintf(&b, "%s: %s\n", name, f)
		}
	}
	return b.String()
}

// printMinutes prints p50 / p99 of every route for each minute of the
// load (by when requests ended), the request rate, and the database
// connections in use: a soak's drift shows as a column getting worse.
func (r soakResult) printMinutes(pool []poolSample) {
	minutes := int(r.elapsed / time.Minute) // the tail after the last whole minute counts in it
	if minutes < 2 {
		return
	}
	in := func(m int, ended []time.Duration) []int {
		var idx []int
		for i, e := range ended {
			if int(e/time.Minute) == m || (m == minutes-1 && int(e/time.Minute) >= m) {
				idx = append(idx, i)
			}
		}
		return idx
	}
	fmt.Printf("\nBy minute of the load, p50 / p99:\n\n| Route |")
	for m := range minutes {
		fmt.Printf(" min %d |", m+1)
	}
	fmt.Printf("\n|---|%s\n", strings.Repeat("---|", minutes))
	t := r.total()
	for _, name := range append(slices.Clone(r.routes), "**All**") {
		s := r.stats[name]
		if s == nil {
			s = &t
		}
		fmt.Printf("| %s |", name)
		for m := range minutes {
			var ls []time.Duration
			for _, i := range in(m, s.ended) {
				ls = append(ls, s.latencies[i])
			}
			fmt.Printf(" %s / %s |", pct(ls, 50), pct(ls, 99))
		}
		fmt.Println()
	}
	fmt.Printf("| Requests/s |")
	for m := range minutes {
		span := time.Minute
		if m == minutes-1 {
			span = r.elapsed - time.Duration(m)*time.Minute
		}
		fmt.Printf(" %.0f |", float64(len(in(m, t.ended)))/span.Seconds())
	}
	fmt.Printf("\n| DB connections in use, mean / max (open) |")
	for m := range minutes {
		var sum, most, open float64
		n := 0
		for _, p := range pool {
			if int(p.at/time.Minute) == m || (m == minutes-1 && int(p.at/time.Minute) >= m) {
				sum, most, open, n = sum+p.acquired, max(most, p.acquired), max(open, p.open), n+1
			}
		}
		if n == 0 {
			fmt.Printf(" - |")
			continue
		}
		fmt.Printf(" %.1f / %.0f (%.0f) |", sum/float64(n), most, open)
	}
	fmt.Println()
}
