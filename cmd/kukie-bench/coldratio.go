package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
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
	before, err := serverCost(srv)
	if err != nil {
		return nil, err
	}
	profiled := make(chan error, 1)
	if o.coldProfile != "" {
		secs := int(time.Duration(o.coldRuns) * 2300 * time.Millisecond / time.Second)
		go func() {
			profiled <- saveURL("http://"+srv.admin+"/debug/pprof/profile?seconds="+strconv.Itoa(secs), o.coldProfile)
		}()
	} else {
		profiled <- nil
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
	after, err := serverCost(srv) // the raw LISTs cost the server nothing
	if err != nil {
		return nil, err
	}
	if err := <-profiled; err != nil {
		return nil, err
	}
	listsAfter, err := sb.appLists()
	if err != nil {
		return nil, err
	}
	// Every cold list must have read the cluster, or it was not cold.
	serverLists := listsAfter - listsBefore - float64(len(raw))
	ratio := float64(pctDur(cold, 50)) / float64(pctDur(raw, 50))
	per := func(seconds float64) float64 { return seconds * 1000 / float64(len(cold)) }
	return []row{
		{fmt.Sprintf("Cold list of %d apps (`refresh=true` past the 2 s floor), %d runs, p50 / max", sb.apps, len(cold)),
			fmt.Sprintf("%s / %s (Application LISTs it made: %.0f)", pct(cold, 50), pct(cold, 100), serverLists), "85 ms"},
		{"Raw LIST: plain Go GET of `/apis/argoproj.io/v1alpha1/applications` as the admin, body read, p50 / max",
			fmt.Sprintf("%s / %s", pct(raw, 50), pct(raw, 100)), "41 ms"},
		{"Ratio cold list / raw LIST (p50)", fmt.Sprintf("**%.2f×**", ratio), "2.1× today; target ≤ 1.3×"},
		{"Server per cold list (means): the Application LIST; CPU time; allocated; GC cycles", fmt.Sprintf("%.1f ms; %.1f ms; %.1f MiB; %.1f",
			per(after.read-before.read), per(after.cpu-before.cpu), (after.alloc-before.alloc)/float64(len(cold))/(1<<20),
			(after.gcs-before.gcs)/float64(len(cold))), ""},
	}, nil
}

// saveURL writes the body of a GET of url (a 200) to path.
func saveURL(url, path string) error {
	res, err := http.Get(url)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %d %.200s", url, res.StatusCode, body)
	}
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o644)
}

// cost is what the server spent so far: GC cycles, and seconds of CPU and in
// Application LISTs, bytes allocated.
type cost struct{ gcs, cpu, read, alloc float64 }

func serverCost(srv *serverProc) (cost, error) {
	var c cost
	for _, m := range []struct {
		name string
		to   *float64
	}{{"go_gc_duration_seconds_count", &c.gcs}, {"process_cpu_seconds_total", &c.cpu},
		{"kukie_cluster_list_duration_seconds_sum", &c.read},
		{"go_memstats_alloc_bytes_total", &c.alloc}} {
		v, err := srv.metric(m.name)
		if err != nil {
			return c, err
		}
		*m.to = v
	}
	return c, nil
}
