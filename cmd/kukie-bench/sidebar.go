package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// sidebarAnswer is the part of GET /v1/argocd/clusters the bench reads.
// A card's state is fresh, stale or pending; a server without card states
// answers only once it has read every cluster (its cards have no state).
type sidebarAnswer struct {
	Clusters []struct {
		ID    string  `json:"id"`
		State *string `json:"state"`
	} `json:"clusters"`
	Unavailable []struct {
		ID string `json:"id"`
	} `json:"unavailable"`
}

// cardCounts counts a sidebar's cards by state.
type cardCounts struct{ fresh, stale, pending, unstated, other, unavailable int }

func (a sidebarAnswer) counts() cardCounts {
	var c cardCounts
	for _, card := range a.Clusters {
		switch {
		case card.State == nil:
			c.unstated++
		case *card.State == "fresh":
			c.fresh++
		case *card.State == "stale":
			c.stale++
		case *card.State == "pending":
			c.pending++
		default:
			c.other++
		}
	}
	c.unavailable = len(a.Unavailable)
	return c
}

func (c *cardCounts) add(d cardCounts) {
	c.fresh += d.fresh
	c.stale += d.stale
	c.pending += d.pending
	c.unstated += d.unstated
	c.other += d.other
	c.unavailable += d.unavailable
}

// read is the number of cards with a summary: fresh, stale, or read by a
// server without card states.
func (c cardCounts) read() int { return c.fresh + c.stale + c.unstated }

func (c cardCounts) String() string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{c.fresh, "fresh"}, {c.stale, "stale"}, {c.pending, "pending"}, {c.unstated, "read (no `state`)"},
		{c.other, "other state"}, {c.unavailable, "unavailable"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	if len(parts) == 0 {
		return "no cards"
	}
	return strings.Join(parts, ", ")
}

// sidebarGet sends one sidebar request and decodes the answer.
func sidebarGet(client *http.Client, url, token string) (time.Duration, sidebarAnswer, error) {
	var a sidebarAnswer
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return 0, a, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	t0 := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return time.Since(t0), a, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	took := time.Since(t0)
	if err == nil && res.StatusCode != 200 {
		err = fmt.Errorf("GET %s: %d %.200s", url, res.StatusCode, body)
	}
	if err == nil {
		err = json.Unmarshal(body, &a)
	}
	return took, a, err
}

// waitAllRead polls the sidebar every 250 ms until all n cards are read
// (none pending or unavailable) or a minute has passed; it returns the
// time from start and the last counts.
func waitAllRead(url, token string, n int, start time.Time) (time.Duration, cardCounts, bool, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		_, a, err := sidebarGet(http.DefaultClient, url, token)
		if err != nil {
			return 0, cardCounts{}, false, err
		}
		c := a.counts()
		if c.read() == n {
			return time.Since(start), c, true, nil
		}
		if time.Now().After(deadline) {
			return time.Since(start), c, false, nil
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// sidebarLoad sends calls sidebar requests from clients at once, the k-th
// to url(k), and adds up the cards' states it saw.
func sidebarLoad(calls, clients int, token string, url func(k int) string) (result, cardCounts) {
	var mu sync.Mutex
	var seen cardCounts
	res := fanOut(calls, clients, func(client *http.Client, k int) (time.Duration, error) {
		took, a, err := sidebarGet(client, url(k), token)
		mu.Lock()
		seen.add(a.counts())
		mu.Unlock()
		return took, err
	})
	return res, seen
}

// sidebarPhase measures the sidebar of a team with o.sidebarClusters FULL
// clusters: the cold first call (o.sidebarColdRuns times, each on a fresh
// database and server), the time until every card is read, calls once
// they are; then with o.replicas servers on one database, what the other
// replicas answer once the first has read every cluster.
func sidebarPhase(o scaleOptions, sb *sandbox) ([]row, error) {
	n := o.sidebarClusters
	ids, teams := make([]string, n), make([]string, n)
	for i := range ids {
		ids[i], teams[i] = fmt.Sprintf("s-%03d", i), "side"
	}
	path, err := sb.clustersFile("sidebar.yaml", ids, teams)
	if err != nil {
		return nil, err
	}
	tok, err := memberToken("side")
	if err != nil {
		return nil, err
	}
	sidebarURL := func(s *serverProc) string { return "http://" + s.api + "/v1/argocd/clusters" }
	var rows []row

	var cold []time.Duration
	for r := range max(1, o.sidebarColdRuns) {
		step(fmt.Sprintf("cold sidebar %d of %d: %d clusters, fresh database and server", r+1, max(1, o.sidebarColdRuns), n))
		more, err := func() ([]row, error) {
			dbURL, drop, err := createDatabase()
			if err != nil {
				return nil, err
			}
			defer drop()
			srv, err := startServer(o.server, dbURL, path)
			if err != nil {
				return nil, err
			}
			defer srv.stop()
			url := sidebarURL(srv)
			before, err := sb.appLists()
			if err != nil {
				return nil, err
			}
			start := time.Now()
			took, first, err := sidebarGet(http.DefaultClient, url, tok)
			if err != nil {
				return nil, err
			}
			cold = append(cold, took)
			if r > 0 {
				return nil, nil
			}
			untilRead, counts, ok, err := waitAllRead(url, tok, n, start)
			if err != nil {
				return nil, err
			}
			after, err := sb.appLists()
			if err != nil {
				return nil, err
			}
			readRow := row{"Until every card is read (polled every 250 ms)",
				fmt.Sprintf("%s (%s; Application LISTs: %.0f)", untilRead.Round(10*time.Millisecond), counts, after-before),
				"— (cards come in as they are read)"}
			if !ok {
				readRow.got = fmt.Sprintf("not all read after a minute: %s", counts)
			}
			step(fmt.Sprintf("%d sidebar calls by %d clients", o.sidebarCalls, o.sidebarCli))
			load, seen := sidebarLoad(o.sidebarCalls, o.sidebarCli, tok, func(int) string { return url })
			end, err := sb.appLists()
			if err != nil {
				return nil, err
			}
			return []row{
				{fmt.Sprintf("First sidebar call, %d clusters never read: the first run's cards", n), first.counts().String(),
					"today the call waits for every read"},
				readRow,
				{fmt.Sprintf("%d sidebar calls by %d clients once all are read, p50 / p99", o.sidebarCalls, o.sidebarCli),
					fmt.Sprintf("%s / **%s** (%d errors; cards seen: %s; Application LISTs meanwhile: %.0f)",
						pct(load.latencies, 50), pct(load.latencies, 99), load.errors, seen, end-after),
					"target ≤ 1 s p99"},
			}, nil
		}()
		if err != nil {
			return nil, err
		}
		rows = append(rows, more...)
	}
	rows = append([]row{{fmt.Sprintf("Cold sidebar (first call, %d clusters never read), %d runs, p50 / max", n, len(cold)),
		fmt.Sprintf("**%s** / %s", pct(cold, 50), pct(cold, 100)), "2.4 s p50; a never-read card answers `pending` at once"}}, rows...)

	if o.replicas < 2 {
		return rows, nil
	}
	more, err := sidebarReplicas(o, sb, path, tok, sidebarURL)
	return append(rows, more...), err
}

// sidebarReplicas runs o.replicas servers on one database: the first
// reads every cluster, then the others are asked.
func sidebarReplicas(o scaleOptions, sb *sandbox, path, tok string, sidebarURL func(*serverProc) string) ([]row, error) {
	n := o.sidebarClusters
	dbURL, drop, err := createDatabase()
	if err != nil {
		return nil, err
	}
	defer drop()
	servers, stop, err := startReplicas(o, o.replicas, dbURL, path)
	if err != nil {
		return nil, err
	}
	defer stop()
	step(fmt.Sprintf("sidebar on replica 1 of %d until every card is read", len(servers)))
	start := time.Now()
	if _, _, err := sidebarGet(http.DefaultClient, sidebarURL(servers[0]), tok); err != nil {
		return nil, err
	}
	untilRead, counts, ok, err := waitAllRead(sidebarURL(servers[0]), tok, n, start)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("replica 1 did not read every cluster within a minute: %s", counts)
	}
	rows := []row{{fmt.Sprintf("%d replicas on one database: replica 1 reads every card (first call to all read)", len(servers)),
		untilRead.Round(10 * time.Millisecond).String(), "—"}}
	before, err := sb.appLists()
	if err != nil {
		return nil, err
	}
	for i, s := range servers[1:] {
		took, a, err := sidebarGet(http.DefaultClient, sidebarURL(s), tok)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row{fmt.Sprintf("… then the first call on replica %d", i+2),
			fmt.Sprintf("**%s** (%s)", took.Round(10*time.Microsecond), a.counts()),
			"≤ 1 s once any replica has read them, cards not pending"})
	}
	after, err := sb.appLists()
	if err != nil {
		return nil, err
	}
	rows = append(rows, row{"Application LISTs during those first calls (API server's count)",
		fmt.Sprintf("**%.0f**", after-before), "0 once snapshots are shared (each replica reads them itself before)"})
	others := servers[1:]
	step(fmt.Sprintf("%d sidebar calls by %d clients over replicas 2..%d", o.sidebarCalls, o.sidebarCli, len(servers)))
	load, seen := sidebarLoad(o.sidebarCalls, o.sidebarCli, tok, func(k int) string { return sidebarURL(others[k%len(others)]) })
	end, err := sb.appLists()
	if err != nil {
		return nil, err
	}
	rows = append(rows, row{fmt.Sprintf("%d sidebar calls by %d clients over replicas 2..%d, p50 / p99", o.sidebarCalls, o.sidebarCli, len(servers)),
		fmt.Sprintf("%s / **%s** (%d errors; cards seen: %s; Application LISTs meanwhile: %.0f)",
			pct(load.latencies, 50), pct(load.latencies, 99), load.errors, seen, end-after),
		"target ≤ 1 s p99"})
	return rows, nil
}
