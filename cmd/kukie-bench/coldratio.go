package main

import (
	"fmt"
	"time"
)

// coldRatioPhase times cold lists (refresh=true past the 2 s floor, so
// every one reads the cluster) beside the LIST they make, sent as a plain
// GET from this process to the same API server, interleaved so both see
// the same machine load. Both clients keep their connection warm.
func coldRatioPhase(o scaleOptions, sb *sandbox) ([]row, error) {
	if o.coldRuns <= 0 {
		return nil, nil
	}
	dbURL, drop, err := createDatabase()
	if err != nil {
		return nil, err
	}
	defer drop()
	path, err := sb.clustersFile("cold.yaml", []string{"bench"}, []string{"bench"})
	if err != nil {
		return nil, err
	}
	srv, err := startServer(o.server, dbURL, path)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	tok, err := memberToken("bench")
	if err != nil {
		return nil, err
	}
	b := &bench{token: tok}
	url := "http://" + srv.api + "/v1/clusters/bench/argocd/applications?refresh=true"
	// The first read sets up the server's cluster client; the first raw
	// LIST this process's connection.
	if _, err := b.get(url); err != nil {
		return nil, err
	}
	if _, err := sb.rawList(); err != nil {
		return nil, err
	}
	step(fmt.Sprintf("cold list and raw LIST, %d runs", o.coldRuns))
	listsBefore, err := sb.appLists()
	if err != nil {
		return nil, err
	}
	var cold, raw []time.Duration
	for range o.coldRuns {
		time.Sleep(2100 * time.Millisecond) // past the refresh floor
		start := time.Now()
		if _, err := b.get(url); err != nil {
			return nil, err
		}
		cold = append(cold, time.Since(start))
		took, err := sb.rawList()
		if err != nil {
			return nil, err
		}
		raw = append(raw, took)
	}
	listsAfter, err := sb.appLists()
	if err != nil {
		return nil, err
	}
	// Every cold list must have read the cluster, or it was not cold.
	serverLists := listsAfter - listsBefore - float64(len(raw))
	ratio := float64(pctDur(cold, 50)) / float64(pctDur(raw, 50))
	return []row{
		{fmt.Sprintf("Cold list of %d apps (`refresh=true` past the 2 s floor), %d runs, p50 / max", sb.apps, len(cold)),
			fmt.Sprintf("%s / %s (Application LISTs it made: %.0f)", pct(cold, 50), pct(cold, 100), serverLists), "85 ms"},
		{"Raw LIST: plain Go GET of `/apis/argoproj.io/v1alpha1/applications` as the admin, body read, p50 / max",
			fmt.Sprintf("%s / %s", pct(raw, 50), pct(raw, 100)), "41 ms"},
		{"Ratio cold list / raw LIST (p50)", fmt.Sprintf("**%.2f×**", ratio), "2.1× today; target ≤ 1.3×"},
	}, nil
}
