package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// memoryPhase runs one server with o.memClusters static clusters (all on
// the sandbox, spread over o.memTeams teams), lists every cluster once
// (o.memParallel at a time) and reads the process's RSS before, after, and
// after o.memRounds sidebar rounds for every team, each round past the
// snapshot TTL so the clusters are read again. It returns the rows and a
// summary of the heap profile taken after the listing.
func memoryPhase(o scaleOptions, sb *sandbox) ([]row, string, error) {
	dbURL, drop, err := createDatabase()
	if err != nil {
		return nil, "", err
	}
	defer drop()
	ids, teams := make([]string, o.memClusters), make([]string, o.memClusters)
	tokens := map[string]string{}
	for i := range ids {
		ids[i], teams[i] = fmt.Sprintf("c-%04d", i), fmt.Sprintf("team-%02d", i%o.memTeams)
		if tokens[teams[i]] == "" {
			if tokens[teams[i]], err = memberToken(teams[i]); err != nil {
				return nil, "", err
			}
		}
	}
	path, err := sb.clustersFile("memory.yaml", ids, teams)
	if err != nil {
		return nil, "", err
	}
	step(fmt.Sprintf("starting a server with %d static clusters", o.memClusters))
	srv, err := startServer(o.server, dbURL, path,
		"KUKIE_CACHE_MAX_CLUSTERS="+strconv.Itoa(max(1024, o.memClusters))) // the default (1024) would do up to 1,024
	if err != nil {
		return nil, "", err
	}
	defer srv.stop()
	time.Sleep(2 * time.Second) // start-up work (migrations, River) done
	idle, _, err := srv.memory()
	if err != nil {
		return nil, "", err
	}
	liveIdle, err := srv.liveHeap()
	if err != nil {
		return nil, "", err
	}

	step(fmt.Sprintf("listing each of the %d clusters once, %d at a time", o.memClusters, o.memParallel))
	start := time.Now()
	listing := fanOut(len(ids), o.memParallel, func(client *http.Client, i int) (time.Duration, error) {
		return getAs(client, tokens[teams[i]], "http://"+srv.api+"/v1/clusters/"+ids[i]+"/argocd/applications")
	})
	listed := time.Since(start)
	if listing.errors > 0 {
		return nil, "", fmt.Errorf("%d of %d lists failed", listing.errors, len(ids))
	}
	if err := srv.settle(3*time.Second, time.Minute); err != nil {
		return nil, "", err
	}
	lastRead := time.Now()
	afterList, _, err := srv.memory()
	if err != nil {
		return nil, "", err
	}
	heap, err := heapSummary(srv, sb.dir, o.heapTop, o.heapOut) // after a GC
	if err != nil {
		return nil, "", err
	}
	liveAfterList, err := srv.metric("go_memstats_heap_alloc_bytes")
	if err != nil {
		return nil, "", err
	}

	team := func(i int) string { return fmt.Sprintf("team-%02d", i) }
	var sidebar []time.Duration
	var reads []string // cluster reads each round caused
	for r := range o.memRounds {
		time.Sleep(time.Until(lastRead.Add(10500 * time.Millisecond))) // every snapshot past the 10 s TTL
		step(fmt.Sprintf("sidebar round %d of %d: %d teams", r+1, o.memRounds, o.memTeams))
		before, err := srv.metric("kukie_cluster_list_calls_total")
		if err != nil {
			return nil, "", err
		}
		round := fanOut(o.memTeams, min(4, o.memTeams), func(client *http.Client, i int) (time.Duration, error) {
			return getAs(client, tokens[team(i)], "http://"+srv.api+"/v1/argocd/clusters")
		})
		if round.errors > 0 {
			return nil, "", fmt.Errorf("sidebar round %d: %d errors", r+1, round.errors)
		}
		sidebar = append(sidebar, round.latencies...)
		// A sidebar that answers before its reads end reads in the
		// background: wait for those reads before measuring.
		if err := srv.settle(3*time.Second, time.Minute); err != nil {
			return nil, "", err
		}
		after, err := srv.metric("kukie_cluster_list_calls_total")
		if err != nil {
			return nil, "", err
		}
		reads = append(reads, fmt.Sprintf("%.0f", after-before))
		lastRead = time.Now()
	}
	afterRounds, peak, err := srv.memory()
	if err != nil {
		return nil, "", err
	}
	liveAfterRounds, err := srv.liveHeap()
	if err != nil {
		return nil, "", err
	}
	cache, err := cacheState(srv)
	if err != nil {
		return nil, "", err
	}
	perApp := float64(afterList-idle) / float64(o.memClusters*sb.apps)
	rows := []row{
		{fmt.Sprintf("RSS idle (%d static clusters registered, none read)", o.memClusters),
			fmt.Sprintf("%s (live heap %s)", mib(idle), mib(liveIdle)), "41 MB"},
		{fmt.Sprintf("RSS after listing every cluster once (%d at a time, %s, %s)", o.memParallel, listed.Round(100*time.Millisecond), listing),
			fmt.Sprintf("**%s** (live heap after a GC: %s)", mib(afterList), mib(int64(liveAfterList))), "461 MB; target ≤ 200 MB"},
		{"… per cached app: RSS (after − idle) / apps; live heap likewise", fmt.Sprintf("%.1f KiB; %.1f KiB", perApp/1024,
			float64(int64(liveAfterList)-liveIdle)/float64(o.memClusters*sb.apps)/1024), "~4 KB; target ≤ 2 KB"},
		{fmt.Sprintf("RSS after %d sidebar rounds (%d teams × %d clusters, 4 teams at a time, each round 10.5 s after the last read; "+
			"cluster reads per round: %s; sidebar p50 %s, max %s)", o.memRounds, o.memTeams, o.memClusters/o.memTeams,
			strings.Join(reads, ", "), pct(sidebar, 50), pct(sidebar, 100)),
			fmt.Sprintf("**%s**, peak (VmHWM) %s (live heap after a GC: %s)", mib(afterRounds), mib(peak), mib(int64(liveAfterRounds))),
			"603 MB; target ≤ 200 MB"},
		{"Snapshots cached at the end; evicted for capacity, for memory (" + memoryLimitSetting() + ")",
			cache, "all cached"},
	}
	return rows, heap, nil
}

// cacheState is the server's snapshot cache: entries and evictions by reason.
func cacheState(srv *serverProc) (string, error) {
	var v [3]float64
	for i, q := range []struct{ name, label string }{{"kukie_snapshot_cache_entries", ""},
		{"kukie_snapshot_cache_evictions_total", `reason="capacity"`}, {"kukie_snapshot_cache_evictions_total", `reason="memory"`}} {
		var labels []string
		if q.label != "" {
			labels = append(labels, q.label)
		}
		n, err := srv.metric(q.name, labels...)
		if err != nil {
			return "", err
		}
		v[i] = n
	}
	return fmt.Sprintf("%.0f; %.0f, %.0f", v[0], v[1], v[2]), nil
}

// memoryLimitSetting is the limit settings the server inherits
// (GOMEMLIMIT wins over KUKIE_MEMORY_LIMIT).
func memoryLimitSetting() string {
	for _, name := range []string{"GOMEMLIMIT", "KUKIE_MEMORY_LIMIT"} {
		if l := os.Getenv(name); l != "" {
			return "`" + name + "` " + l
		}
	}
	return "`KUKIE_MEMORY_LIMIT`, `GOMEMLIMIT` unset"
}

// fanOut sends n requests, parallel at a time over one connection pool:
// send(client, k) sends the k-th. It gathers the latencies and counts the
// failures.
func fanOut(n, parallel int, send func(client *http.Client, k int) (time.Duration, error)) result {
	work := make(chan int, n)
	for k := range n {
		work <- k
	}
	close(work)
	transport := &http.Transport{MaxIdleConnsPerHost: parallel, MaxConnsPerHost: parallel}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 60 * time.Second}
	var mu sync.Mutex
	var out result
	start := time.Now()
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for k := range work {
				took, err := send(client, k)
				mu.Lock()
				out.latencies = append(out.latencies, took)
				if err != nil {
					out.errors++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	out.n, out.elapsed = int64(len(out.latencies)), time.Since(start)
	return out
}

// getAs GETs url with token and reads the body; a non-200 is an error.
func getAs(client *http.Client, token, url string) (time.Duration, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	t0 := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return time.Since(t0), err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	if err == nil && res.StatusCode != 200 {
		err = fmt.Errorf("GET %s: %d", url, res.StatusCode)
	}
	return time.Since(t0), err
}

// heapSummary fetches the server's heap profile from the admin listener
// (after a GC) and returns the top rows by in-use bytes, as
// `go tool pprof -top -sample_index=inuse_space` prints them. With save
// set the profile is also copied there.
func heapSummary(srv *serverProc, dir string, top int, save string) (string, error) {
	res, err := http.Get("http://" + srv.admin + "/debug/pprof/heap?gc=1")
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != 200 {
		err = fmt.Errorf("GET /debug/pprof/heap on the admin listener: %d %.200s", res.StatusCode, body)
	}
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "heap.pb.gz")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		return "", err
	}
	if save != "" {
		if err := os.WriteFile(save, body, 0o644); err != nil {
			return "", err
		}
	}
	out, err := runOutput("go", "tool", "pprof", "-top", "-sample_index=inuse_space", "-nodecount="+strconv.Itoa(top), path)
	if err != nil {
		return "", fmt.Errorf("go tool pprof: %w\n%s", err, out)
	}
	// Keep the totals line and the table; drop the file and build lines,
	// and shorten generic instantiations ([go.shape.struct { ... }]) that
	// run to the end of a line.
	var b strings.Builder
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "File:") || strings.HasPrefix(line, "Build ID:") || strings.HasPrefix(line, "Time:") {
			continue
		}
		if i := strings.Index(line, "[go.shape."); i >= 0 {
			rest := ""
			if strings.HasSuffix(strings.TrimSpace(line), "(inline)") {
				rest = " (inline)"
			}
			line = line[:i] + "[…]" + rest + "\n"
		}
		b.WriteString(line)
	}
	return b.String(), nil
}

// liveHeap makes the server collect garbage (the heap profile's gc=1) and
// returns the Go heap then allocated: what the cache holds, without the
// garbage the collector's pacing lets RSS carry.
func (p *serverProc) liveHeap() (int64, error) {
	res, err := http.Get("http://" + p.admin + "/debug/pprof/heap?gc=1")
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		return 0, fmt.Errorf("GET /debug/pprof/heap on the admin listener: %d", res.StatusCode)
	}
	v, err := p.metric("go_memstats_heap_alloc_bytes")
	return int64(v), err
}

// runOutput runs a command and returns its combined output.
func runOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}
