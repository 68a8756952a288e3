package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// serverProc is one kukie-server process started by the bench.
type serverProc struct {
	api, admin string // host:port of the public and admin listeners
	cmd        *exec.Cmd
}

// startServer runs bin serve on free loopback ports over the database
// dbURL with the static clusters file, plus extra KUKIE_ variables, and
// waits until it is ready.
func startServer(bin, dbURL, clustersPath string, extra ...string) (*serverProc, error) {
	p := &serverProc{api: freeAddr(), admin: freeAddr()}
	p.cmd = exec.Command(bin, "serve")
	p.cmd.Env = append(os.Environ(), "KUKIE_HTTP_ADDR="+p.api, "KUKIE_ADMIN_ADDR="+p.admin, "KUKIE_DATABASE_URL="+dbURL,
		"KUKIE_AUTH_HS256_SECRET="+secret, "KUKIE_MIGRATE_ON_START=true", "KUKIE_LOG_LEVEL=warn",
		"KUKIE_SHUTDOWN_DELAY=0s", "KUKIE_STATIC_CLUSTERS_FILE="+clustersPath)
	p.cmd.Env = append(p.cmd.Env, extra...)
	p.cmd.Stdout, p.cmd.Stderr = os.Stderr, os.Stderr
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	if err := waitReady("http://" + p.admin + "/readyz"); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// stop interrupts the process and waits for it.
func (p *serverProc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	_ = p.cmd.Wait()
}

// memory reads the process's resident set (VmRSS) and its peak (VmHWM)
// from /proc, in bytes.
func (p *serverProc) memory() (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc status %s: %w", name, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	return rss, peak, sc.Err()
}

// metric sums the samples of a metric on the server's /metrics whose
// labels include every "name=\"value\"" pair given (none: all samples).
func (p *serverProc) metric(name string, labels ...string) (float64, error) {
	res, err := http.Get("http://" + p.admin + "/metrics")
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, err
	}
	return sumSamples(body, name, labels...)
}

var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)`)

// sumSamples sums the samples of a metric in the Prometheus text format
// whose label set contains every given `name="value"` pair.
func sumSamples(body []byte, name string, labels ...string) (float64, error) {
	var sum float64
	for line := range bytes.Lines(body) {
		m := sampleLine.FindSubmatch(line)
		if m == nil || string(m[1]) != name {
			continue
		}
		matches := true
		for _, l := range labels {
			if !bytes.Contains(m[2], []byte(l)) {
				matches = false
				break
			}
		}
		if !matches {
			continue
		}
		v, err := strconv.ParseFloat(string(m[3]), 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", line, err)
		}
		sum += v
	}
	return sum, nil
}

// listCallsOK is the server's count of successful cluster LIST calls.
func (p *serverProc) listCallsOK() (float64, error) {
	return p.metric("kukie_cluster_list_calls_total", `outcome="ok"`)
}

// settle waits until the server has made no cluster read for quiet (its
// LIST counter stands still), or max has passed: background reads finish
// before memory is read.
func (p *serverProc) settle(quiet, max time.Duration) error {
	deadline := time.Now().Add(max)
	last, err := p.metric("kukie_cluster_list_calls_total")
	if err != nil {
		return err
	}
	since := time.Now()
	for time.Now().Before(deadline) && time.Since(since) < quiet {
		time.Sleep(250 * time.Millisecond)
		n, err := p.metric("kukie_cluster_list_calls_total")
		if err != nil {
			return err
		}
		if n != last {
			last, since = n, time.Now()
		}
	}
	return nil
}

// mib formats bytes in MiB (2^20), the unit of VmRSS / 1024.
func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
