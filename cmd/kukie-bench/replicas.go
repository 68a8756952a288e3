package main

import (
	"fmt"
	"strings"
	"time"
)

// replicasPhase runs o.replicas servers on one database with the one
// static cluster of the sandbox. Clients spread round-robin over them poll
// list and detail, without and then with refresh=true on every list call,
// and the Application LISTs are counted by the API server itself (each
// server's own count beside it). Then the cached-list throughput on one
// replica and spread over all of them.
func replicasPhase(o scaleOptions, sb *sandbox) ([]row, error) {
	dbURL, drop, err := createDatabase()
	if err != nil {
		return nil, err
	}
	defer drop()
	path, err := sb.clustersFile("replicas.yaml", []string{"bench"}, []string{"bench"})
	if err != nil {
		return nil, err
	}
	servers, stop, err := startReplicas(o, o.replicas, dbURL, path)
	if err != nil {
		return nil, err
	}
	defer stop()
	tok, err := memberToken("bench")
	if err != nil {
		return nil, err
	}
	b := &bench{token: tok}
	list := func(s *serverProc) string { return "http://" + s.api + "/v1/clusters/bench/argocd/applications" }
	n := len(servers)

	// poll returns the load's result, the API server's LIST count and each
	// server's own count of successful LISTs during it.
	poll := func(refresh bool) (result, float64, []float64, error) {
		suffix := ""
		if refresh {
			suffix = "?refresh=true"
		}
		apiBefore, before, err := listCounts(sb, servers)
		if err != nil {
			return result{}, 0, nil, err
		}
		res := b.loadFrom(o.pollClients, o.pollFor, func(c, i int) string {
			s := servers[c%n]
			if i%2 == 0 {
				return list(s) + suffix
			}
			return list(s) + "/sandbox-plain"
		})
		apiAfter, after, err := listCounts(sb, servers)
		for i := range after {
			after[i] -= before[i]
		}
		return res, apiAfter - apiBefore, after, err
	}
	var rows []row
	if o.pollFor > 0 {
		for _, refresh := range []bool{false, true} {
			what := fmt.Sprintf("%d clients polling list + detail for %s over %d replicas: Application LISTs (API server's count)",
				o.pollClients, o.pollFor, n)
			window, target := 10*time.Second, "≤ 6"
			if refresh {
				what = "Same with `refresh=true` on every list call"
				window, target = 2*time.Second, "≤ 30"
			}
			step(fmt.Sprintf("%d clients polling %d replicas for %s (refresh=%v)", o.pollClients, n, o.pollFor, refresh))
			res, lists, own, err := poll(refresh)
			if err != nil {
				return nil, err
			}
			rows = append(rows, row{what,
				fmt.Sprintf("**%.0f** (the servers' own counts: %s; bound for one replica: %d); %s", lists, joinCounts(own),
					int(o.pollFor/window), res),
				fmt.Sprintf("%s in 60 s, however many replicas (each replica alone held it; three read three times as often)", target)})
		}
	}
	if o.listFor > 0 {
		step(fmt.Sprintf("cached list: %d clients for %s on one replica", o.listClients, o.listFor))
		one := b.load(o.listClients, o.listFor, func(int) string { return list(servers[0]) })
		step(fmt.Sprintf("cached list: %d clients for %s over %d replicas", o.listClients, o.listFor, n))
		all := b.loadFrom(o.listClients, o.listFor, func(c, _ int) string { return list(servers[c%n]) })
		rows = append(rows,
			row{fmt.Sprintf("Cached list, %d clients, %s, one replica", o.listClients, o.listFor), one.String(),
				"single-replica figure: 3,374 req/s (2026-11-30)"},
			row{fmt.Sprintf("Same spread over %d replicas (same 2 cores)", n),
				fmt.Sprintf("%s (%.2f× one replica)", all, all.rps()/one.rps()), "beside the single-replica figure"})
	}
	return rows, nil
}

// listCounts reads the API server's count of Application LISTs and each
// server's count of successful cluster LISTs.
func listCounts(sb *sandbox, servers []*serverProc) (float64, []float64, error) {
	api, err := sb.appLists()
	if err != nil {
		return 0, nil, fmt.Errorf("API server metrics: %w", err)
	}
	own := make([]float64, len(servers))
	for i, s := range servers {
		if own[i], err = s.listCallsOK(); err != nil {
			return 0, nil, err
		}
	}
	return api, own, nil
}

// joinCounts formats per-server counts as "a + b + c = sum".
func joinCounts(counts []float64) string {
	parts := make([]string, len(counts))
	var sum float64
	for i, c := range counts {
		parts[i] = fmt.Sprintf("%.0f", c)
		sum += c
	}
	if len(counts) == 1 {
		return parts[0]
	}
	return fmt.Sprintf("%s = %.0f", strings.Join(parts, " + "), sum)
}
