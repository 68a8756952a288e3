package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// soakOptions are the flags of `kukie-bench soak`.
type soakOptions struct {
	server  string
	apps    int
	clients int
	runFor  time.Duration
	warmup  time.Duration
	settle  time.Duration
	poolMax int
	// vacuumEvery runs VACUUM (ANALYZE) on the soak's database, standing
	// in for autovacuum, which the CI PostgreSQL has off.
	vacuumEvery time.Duration
}

// soak runs issue 13's bounded load: one server on a throwaway database
// and one FULL static cluster (the sandbox API server), clients sending a
// mix of the product's routes for a fixed time, all on loopback. It prints
// per-route requests, 4xx, other errors and latency, and the server's heap,
// RSS and goroutines before the load, after the warm-up, at the end and
// after the connections close. Any answer that is neither 2xx nor 4xx,
// and any failed request, makes it fail.
func soak(args []string) error {
	var o soakOptions
	fs := flag.NewFlagSet("soak", flag.ExitOnError)
	fs.StringVar(&o.server, "server", "bin/kukie-server", "the kukie-server binary")
	fs.IntVar(&o.apps, "apps", 200, "Applications in the cluster (the 12 fixtures plus generated ones)")
	fs.IntVar(&o.clients, "clients", 64, "concurrent clients, each sending the mix back to back")
	fs.DurationVar(&o.runFor, "for", 5*time.Minute, "duration of the load, warm-up included")
	fs.DurationVar(&o.warmup, "warmup", time.Minute, "when the first memory reading is taken, from the start of the load")
	fs.DurationVar(&o.settle, "settle", 10*time.Second, "pause after the load, connections closed, before the last reading")
	fs.DurationVar(&o.vacuumEvery, "vacuum-every", time.Minute, "VACUUM (ANALYZE) the database this often during the load, as autovacuum "+
		"would (autovacuum_naptime); 0 never: a server with autovacuum off, where the plan tables are never analysed")
	fs.IntVar(&o.poolMax, "pool-max-conns", 0, "the server's database pool size (pool_max_conns in its URL; 0: pgx's default, max(4, CPUs))")
	_ = fs.Parse(args)
	switch {
	case o.clients < 1:
		return errors.New("-clients must be at least 1")
	case o.apps < 12:
		return errors.New("-apps must be at least 12 (the fixtures)")
	case o.warmup <= 0 || o.warmup >= o.runFor:
		return errors.New("-warmup must be above zero and shorter than -for")
	}
	if _, err := os.Stat(o.server); err != nil {
		return fmt.Errorf("-server: %w (run make build)", err)
	}
	ctrllog.SetLogger(ctrllog.Log.WithSink(ctrllog.NullLogSink{}))

	started := time.Now()
	loadStart := loadAverage()
	sb, err := startSandbox(o.apps)
	if err != nil {
		return err
	}
	defer sb.stop()
	dbURL, drop, err := createDatabase()
	if err != nil {
		return err
	}
	defer drop()
	serverURL := dbURL
	if o.poolMax > 0 {
		serverURL = withQuery(dbURL, fmt.Sprintf("pool_max_conns=%d", o.poolMax))
	}
	path, err := sb.clustersFile("soak.yaml", []string{soakCluster}, []string{soakTeam})
	if err != nil {
		return err
	}
	step("starting " + o.server)
	srv, err := startServer(o.server, serverURL, path)
	if err != nil {
		return err
	}
	defer srv.stop()
	time.Sleep(2 * time.Second) // start-up work (migrations, River) done
	idle, err := srv.sample("idle, before the load")
	if err != nil {
		return err
	}
	mix, err := newSoakMix(srv.api, o)
	if err != nil {
		return err
	}

	step(fmt.Sprintf("soak: %d clients for %s, memory read after %s", o.clients, o.runFor, o.warmup))
	vacuumed, stopVacuum := vacuumDatabase(dbURL, o.vacuumEvery)
	clusterBefore, err := clusterRequests(sb)
	if err != nil {
		return err
	}
	pool := srv.watchPool(time.Second)
	warm := make(chan sampleResult, 1)
	res := mix.run(o.clients, o.runFor, o.warmup, func() {
		s, err := srv.sample(fmt.Sprintf("after the %s warm-up, under load", o.warmup))
		warm <- sampleResult{s, err}
	})
	poolSamples := pool()
	end, err := srv.sample(fmt.Sprintf("end of the load (%s), connections still open", o.runFor))
	if err != nil {
		return err
	}
	if err := stopVacuum(); err != nil {
		return err
	}
	clusterAfter, err := clusterRequests(sb)
	if err != nil {
		return err
	}
	w := <-warm
	if w.err != nil {
		return w.err
	}
	mix.closeConnections()
	time.Sleep(o.settle)
	settled, err := srv.sample(fmt.Sprintf("%s later, client connections closed", o.settle))
	if err != nil {
		return err
	}

	fmt.Printf("## Soak (issue 13)\n\nServer binary: %s (%s). %s; load average at start %s, at end %s (1, 5, 15 min).\n",
		o.server, serverVersion(o.server), started.UTC().Format("2006-01-02 15:04 MST"), loadStart, loadAverage())
	poolSize := "pgx's default, max(4, CPUs)"
	if o.poolMax > 0 {
		poolSize = fmt.Sprint(o.poolMax)
	}
	fmt.Printf("%d clients for %s on loopback, one FULL static cluster (sandbox kube-apiserver) with %d Applications, "+
		"a throwaway database (server pool: %s connections); weights per request: %s.\n", o.clients, o.runFor, o.apps, poolSize, mix.weights())
	res.print()
	fmt.Printf("Requests the cluster's API server served during the load: %.0f (%.1f/s; the server's client limit is 50/s per cluster "+
		"by default). The database was vacuumed and analysed %d times during the load (autovacuum stand-in, every %s).\n",
		clusterAfter-clusterBefore, (clusterAfter-clusterBefore)/res.elapsed.Seconds(), vacuumed(), o.vacuumEvery)
	res.printMinutes(poolSamples)
	printSamples([]memSample{idle, w.sample, end, settled})
	if bad := res.failures(); bad != "" {
		fmt.Printf("\n### Failures\n\n```\n%s```\n", bad)
	}
	if n := res.total().errors; n > 0 {
		return fmt.Errorf("%d requests failed or answered neither 2xx nor 4xx (listed above)", n)
	}
	return nil
}

// memSample is the server's memory and goroutines at one point of the run.
type memSample struct {
	label      string
	heapAlloc  int64 // go_memstats_heap_alloc_bytes as found (live + garbage)
	heapLive   int64 // the same right after a forced GC
	heapInuse  int64 // go_memstats_heap_inuse_bytes after that GC (spans in use)
	rss        int64 // VmRSS
	goroutines int64
}

type sampleResult struct {
	sample memSample
	err    error
}

// sample reads the heap as found, then forces a GC (the heap profile's
// gc=1) and reads the live heap, RSS and goroutines.
func (p *serverProc) sample(label string) (memSample, error) {
	s := memSample{label: label}
	alloc, err := p.metric("go_memstats_heap_alloc_bytes")
	if err != nil {
		return s, err
	}
	s.heapAlloc = int64(alloc)
	if s.heapLive, err = p.liveHeap(); err != nil {
		return s, err
	}
	inuse, err := p.metric("go_memstats_heap_inuse_bytes")
	if err != nil {
		return s, err
	}
	s.heapInuse = int64(inuse)
	if s.rss, _, err = p.memory(); err != nil {
		return s, err
	}
	g, err := p.metric("go_goroutines")
	s.goroutines = int64(g)
	return s, err
}

func printSamples(samples []memSample) {
	fmt.Printf("\n| Server | Go heap as found | Live heap after a GC | Heap in use after the GC | RSS | Goroutines |\n|---|---|---|---|---|---|\n")
	for _, s := range samples {
		fmt.Printf("| %s | %s | %s | %s | %s | %d |\n", s.label, mib1(s.heapAlloc), mib1(s.heapLive), mib1(s.heapInuse), mib1(s.rss), s.goroutines)
	}
	fmt.Println()
}

// mib1 formats bytes in MiB with one decimal.
func mib1(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// poolSample is the server's database pool at one moment of the load.
type poolSample struct {
	at             time.Duration // from the start of the watch
	acquired, open float64
}

// watchPool reads the server's pool gauges every interval until the
// returned function is called, which returns the samples.
func (p *serverProc) watchPool(interval time.Duration) func() []poolSample {
	stop := make(chan struct{})
	done := make(chan []poolSample)
	start := time.Now()
	go func() {
		var out []poolSample
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				done <- out
				return
			case <-t.C:
				acquired, err1 := p.metric("kukie_db_pool_acquired_connections")
				open, err2 := p.metric("kukie_db_pool_total_connections")
				if err1 == nil && err2 == nil {
					out = append(out, poolSample{time.Since(start), acquired, open})
				}
			}
		}
	}()
	return func() []poolSample {
		close(stop)
		return <-done
	}
}

// withQuery adds a parameter to a database URL.
func withQuery(dbURL, param string) string {
	if u, err := url.Parse(dbURL); err == nil && u.RawQuery != "" {
		return dbURL + "&" + param
	}
	return dbURL + "?" + param
}

// vacuumDatabase runs VACUUM (ANALYZE) on the database every interval (0:
// never) until stop is called; vacuumed tells how many runs finished. The
// CI PostgreSQL has autovacuum off, and without statistics PostgreSQL
// plans the history query over the growing plan tables as nested loops
// (measured: 110 ms at 260 plans, 5 ms once analysed): production servers
// analyse by themselves.
func vacuumDatabase(dbURL string, every time.Duration) (vacuumed func() int, stop func() error) {
	var runs atomic.Int64
	if every <= 0 {
		return func() int { return 0 }, func() error { return nil }
	}
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- func() error {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, dbURL)
			if err != nil {
				return err
			}
			defer conn.Close(ctx)
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-done:
					return nil
				case <-t.C:
					if _, err := conn.Exec(ctx, "VACUUM (ANALYZE)"); err != nil {
						return fmt.Errorf("VACUUM (ANALYZE): %w", err)
					}
					runs.Add(1)
				}
			}
		}()
	}()
	return func() int { return int(runs.Load()) }, func() error {
		close(done)
		return <-errc
	}
}

// clusterRequests is the sandbox API server's count of requests served
// (apiserver_request_total, every verb and code).
func clusterRequests(sb *sandbox) (float64, error) {
	body, err := sb.read("/metrics")
	if err != nil {
		return 0, err
	}
	return sumSamples(body, "apiserver_request_total")
}
