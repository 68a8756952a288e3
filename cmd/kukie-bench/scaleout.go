package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kukie/gitops-server/internal/testkit/authtest"
)

// scaleOptions are the flags of `kukie-bench scaleout`.
type scaleOptions struct {
	server string
	phases []string

	apps                     int // Applications for the replicas and cold-ratio phases
	replicas                 int
	pollFor                  time.Duration
	pollClients              int
	listFor                  time.Duration
	listClients              int
	coldRuns                 int
	smallApps                int // Applications for the memory and sidebar phases
	memClusters, memTeams    int
	memParallel, memRounds   int
	heapTop                  int
	heapOut                  string
	coldProfile              string
	sidebarClusters          int
	sidebarColdRuns          int
	sidebarCalls, sidebarCli int
}

// scalePhases are the phases of `kukie-bench scaleout`, in run order: the
// first two share a sandbox of -apps Applications, the last two one of
// -small-apps.
var scalePhases = []string{"replicas", "cold-ratio", "memory", "sidebar"}

// scaleout measures issue 12's scale-out figures against the real
// kukie-server binary, each beside the issue's reference: cluster LISTs
// with several replicas on one database (counted by the API server),
// the cold list against the raw LIST, RSS and a heap profile with 1,000
// clusters, and the sidebar of a team with 200 clusters.
func scaleout(args []string) error {
	var o scaleOptions
	fs := flag.NewFlagSet("scaleout", flag.ExitOnError)
	fs.StringVar(&o.server, "server", "bin/kukie-server", "the kukie-server binary")
	phases := fs.String("phases", strings.Join(scalePhases, ","), "phases to run, comma-separated: "+strings.Join(scalePhases, ", "))
	fs.IntVar(&o.apps, "apps", 500, "Applications in the sandbox of the replicas and cold-ratio phases")
	fs.IntVar(&o.replicas, "replicas", 3, "server processes on one database (replicas and sidebar phases)")
	fs.DurationVar(&o.pollFor, "poll-for", 60*time.Second, "duration of each polling run (replicas)")
	fs.IntVar(&o.pollClients, "poll-clients", 100, "clients polling list and detail, spread round-robin over the replicas")
	fs.DurationVar(&o.listFor, "list-for", 10*time.Second, "duration of each cached-list throughput run (replicas)")
	fs.IntVar(&o.listClients, "list-clients", 64, "clients of the cached-list throughput runs")
	fs.IntVar(&o.coldRuns, "cold-runs", 10, "cold lists and raw LISTs (cold-ratio)")
	fs.IntVar(&o.smallApps, "small-apps", 100, "Applications in the sandbox of the memory and sidebar phases")
	fs.IntVar(&o.memClusters, "mem-clusters", 1000, "static clusters, all on the one sandbox (memory)")
	fs.IntVar(&o.memTeams, "mem-teams", 10, "teams the memory phase's clusters are spread over (a sidebar round asks each team)")
	fs.IntVar(&o.memParallel, "mem-parallel", 16, "clusters listed at once (memory)")
	fs.IntVar(&o.memRounds, "mem-rounds", 3, "sidebar rounds after the listing, each past the snapshot TTL (memory)")
	fs.IntVar(&o.heapTop, "heap-top", 15, "rows of the heap profile summary (memory)")
	fs.StringVar(&o.coldProfile, "cold-profile", "", "save the server's CPU profile over the cold lists to this file (cold-ratio)")
	fs.StringVar(&o.heapOut, "heap-out", "", "also save the heap profile (after the listing) to this file (memory)")
	fs.IntVar(&o.sidebarClusters, "sidebar-clusters", 200, "FULL clusters of the sidebar's team")
	fs.IntVar(&o.sidebarColdRuns, "sidebar-cold-runs", 3, "cold sidebars, each on a fresh database and server")
	fs.IntVar(&o.sidebarCalls, "sidebar-calls", 200, "sidebar calls once every card is read")
	fs.IntVar(&o.sidebarCli, "sidebar-clients", 8, "clients of those calls")
	_ = fs.Parse(args)
	// envtest logs through controller-runtime, which otherwise complains
	// with a stack trace that no logger was set.
	ctrllog.SetLogger(ctrllog.Log.WithSink(ctrllog.NullLogSink{}))
	for p := range strings.SplitSeq(*phases, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !slices.Contains(scalePhases, p) {
			return fmt.Errorf("-phases: unknown phase %q (known: %s)", p, strings.Join(scalePhases, ", "))
		}
		o.phases = append(o.phases, p)
	}
	if _, err := os.Stat(o.server); err != nil {
		return fmt.Errorf("-server: %w (run make build)", err)
	}
	if o.replicas < 1 {
		return fmt.Errorf("-replicas must be at least 1")
	}
	want := func(p string) bool { return slices.Contains(o.phases, p) }

	fmt.Printf("## Scale-out (issue 12)\n\nServer binary: %s (%s). %s, load average %s.\n", o.server, serverVersion(o.server),
		time.Now().UTC().Format("2006-01-02 15:04 MST"), loadAverage())
	defer func() {
		fmt.Printf("Finished %s, load average %s.\n", time.Now().UTC().Format("15:04 MST"), loadAverage())
	}()
	if want("replicas") || want("cold-ratio") {
		sb, err := startSandbox(o.apps)
		if err != nil {
			return err
		}
		err = func() error {
			if want("replicas") {
				rows, err := replicasPhase(o, sb)
				if err != nil {
					return fmt.Errorf("replicas: %w", err)
				}
				printTable(fmt.Sprintf("%d replicas on one database, %d Applications", o.replicas, o.apps), rows)
			}
			if want("cold-ratio") {
				rows, err := coldRatioPhase(o, sb)
				if err != nil {
					return fmt.Errorf("cold-ratio: %w", err)
				}
				printTable(fmt.Sprintf("Cold list against the raw LIST, %d Applications", o.apps), rows)
			}
			return nil
		}()
		sb.stop()
		if err != nil {
			return err
		}
	}
	if want("memory") || want("sidebar") {
		sb, err := startSandbox(o.smallApps)
		if err != nil {
			return err
		}
		err = func() error {
			if want("memory") {
				rows, heap, err := memoryPhase(o, sb)
				if err != nil {
					return fmt.Errorf("memory: %w", err)
				}
				printTable(fmt.Sprintf("Memory with %d clusters × %d Applications", o.memClusters, o.smallApps), rows)
				fmt.Printf("Heap profile after the listing (`go tool pprof -top -sample_index=inuse_space`):\n\n```\n%s```\n", heap)
			}
			if want("sidebar") {
				rows, err := sidebarPhase(o, sb)
				if err != nil {
					return fmt.Errorf("sidebar: %w", err)
				}
				printTable(fmt.Sprintf("Sidebar of a team with %d FULL clusters × %d Applications", o.sidebarClusters, o.smallApps), rows)
			}
			return nil
		}()
		sb.stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// row is one line of a result table: what was measured, the result, and
// the issue's figure for it.
type row struct{ what, got, issue string }

func printTable(title string, rows []row) {
	fmt.Printf("\n### %s\n\n| Measurement | Result | Issue 12 |\n|---|---|---|\n", title)
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s |\n", r.what, r.got, r.issue)
	}
	fmt.Println()
}

// memberToken is a member's token for team.
func memberToken(team string) (string, error) {
	return authtest.HS256([]byte(secret), authtest.Claims{Sub: "bench", Team: team, Roles: []string{"member"}})
}

// startReplicas starts n servers on one database with the same clusters
// file, one after the other: the first applies the migrations (every one
// has KUKIE_MIGRATE_ON_START, the later ones find nothing to do).
func startReplicas(o scaleOptions, n int, dbURL, clustersPath string, extra ...string) ([]*serverProc, func(), error) {
	var servers []*serverProc
	stop := func() {
		for _, s := range servers {
			s.stop()
		}
	}
	for i := range n {
		step(fmt.Sprintf("starting replica %d of %d", i+1, n))
		s, err := startServer(o.server, dbURL, clustersPath, extra...)
		if err != nil {
			stop()
			return nil, nil, err
		}
		servers = append(servers, s)
	}
	return servers, stop, nil
}

// serverVersion is what `kukie-server version` prints (make build stamps
// the commit), or why it could not be asked.
func serverVersion(bin string) string {
	out, err := runOutput(bin, "version")
	if err != nil {
		return "version unknown: " + err.Error()
	}
	return strings.TrimSpace(out)
}

// pctDur is the p-th percentile (100 = max) as a duration, for ratios.
func pctDur(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// loadAverage is the machine's 1, 5 and 15 minute load average: the
// machine is shared, and the figures are read beside it.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}
