// Command kukie-sandbox runs `make run`'s local world, so that every feature
// of the server can be tried on one machine: a local Git server holding the
// sandbox GitOps repository (HTTPS with a development CA, a private variant
// behind a token), a local AWS account (the STS, EKS and CloudFormation
// stand-ins the tests use), the SNS stand-in behind a CONNECT proxy, and,
// once `make tools` has built kube-apiserver and etcd, the sandbox cluster:
// a real API server with the Argo CD fixture apps, standing for the static
// clusters "sandbox" and "sandbox-limited" and for the account's two EKS
// clusters. It runs until SIGINT, SIGTERM or SIGHUP.
//
// Its other commands talk to the running sandbox over a control socket, or
// help the printed lines:
//
//	kukie-sandbox cluster -assets DIR          start the cluster stage; prints the clusters file
//	kukie-sandbox stack-update --access-level LIMITED|FULL
//	kukie-sandbox lines -stage api|git|cluster print the lines of docs/try-it.json for a stage
//	kukie-sandbox pick FIELD                   print a top-level field of the JSON on stdin
//
// It is a development tool built from the test kits: nothing of it reaches
// the server binary or image.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	execShimmed() // as kube-apiserver or etcd: exec the real one, never returns
	if err := dispatch(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kukie-sandbox:", err)
		os.Exit(1)
	}
}

func dispatch(args []string, stdin io.Reader, stdout io.Writer) error {
	cmd := "run"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		return runWorld(args)
	case "cluster":
		return runCluster(args, stdout)
	case "stack-update":
		return runStackUpdate(args, stdout)
	case "lines":
		return runLines(args, stdout)
	case "pick":
		return runPick(args, stdin, stdout)
	}
	return fmt.Errorf("unknown command %q (run, cluster, stack-update, lines, pick)", cmd)
}

// defaultDir is the sandbox's directory: $KUKIE_DEV_DIR/sandbox, as make
// run sets it; else the sandbox folder beside the bin folder this binary
// was built into (make run: .dev/bin and .dev/sandbox), so the printed
// commands work from any directory; else .dev/sandbox.
func defaultDir() string {
	if d := os.Getenv("KUKIE_DEV_DIR"); d != "" {
		return filepath.Join(d, "sandbox")
	}
	if self, err := os.Executable(); err == nil {
		if bin := filepath.Dir(self); filepath.Base(bin) == "bin" {
			if d := filepath.Join(filepath.Dir(bin), "sandbox"); isDir(d) {
				return d
			}
		}
	}
	return filepath.Join(".dev", "sandbox")
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// runWorld runs the world until a signal; SIGHUP too, so a closed terminal
// stops the sandbox and the API server and etcd it started.
func runWorld(args []string) error {
	fs := flag.NewFlagSet("kukie-sandbox", flag.ContinueOnError)
	dir := fs.String("dir", defaultDir(), "where to write the world's files and the control socket")
	team := fs.String("team", "demo", "the team the sandbox clusters, repository and AWS account belong to")
	api := fs.String("api", "http://"+os.Getenv("KUKIE_HTTP_ADDR"), "the server's public URL (onboarding, the SNS webhook)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(*dir, 0o700); err != nil { // tokens and keys are written here
		return err
	}
	for _, f := range []string{fileWorld, fileServerEnv, fileClusters} {
		_ = os.Remove(filepath.Join(*dir, f)) // written again as the world comes up: their presence means ready
	}
	start := time.Now()
	w, err := startWorld(*dir, *team, *api, os.Getenv("KUKIE_AUTH_HS256_SECRET"))
	if err != nil {
		return err
	}
	defer w.close()
	stopControl, err := w.serveControl(ctx)
	if err != nil {
		return err
	}
	defer stopControl()
	fmt.Fprintf(os.Stderr, "kukie-sandbox: Git world at %s, AWS and SNS stand-ins up (%.1f s)\n",
		w.git.publicURL, time.Since(start).Seconds())
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "kukie-sandbox: stopping")
	return nil
}

// runCluster asks the running sandbox to start its cluster stage and
// prints the static clusters file's path.
func runCluster(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("kukie-sandbox cluster", flag.ContinueOnError)
	dir := fs.String("dir", defaultDir(), "the running sandbox's directory")
	assets := fs.String("assets", "", "the directory holding kube-apiserver and etcd (make tools)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *assets == "" {
		return errors.New("-assets is required")
	}
	abs, err := filepath.Abs(*assets)
	if err != nil {
		return err
	}
	// Starting kube-apiserver and etcd takes seconds; a minute is allowed for
	// each (envtest's own bound), and the rest for the fixtures.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var ans clusterAnswer
	if err := control(ctx, *dir, "/cluster", clusterRequest{Assets: abs}, &ans); err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, ans.ClustersFile)
	return err
}

// runStackUpdate changes the sandbox stack's AccessLevel and delivers its
// notification to the server, printing the webhook's answer.
func runStackUpdate(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("kukie-sandbox stack-update", flag.ContinueOnError)
	dir := fs.String("dir", defaultDir(), "the running sandbox's directory")
	level := fs.String("access-level", "", "the stack's new AccessLevel: FULL or LIMITED")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ans stackUpdateAnswer
	if err := control(ctx, *dir, "/stack-update", stackUpdateRequest{AccessLevel: *level}, &ans); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stack updated to AccessLevel=%s; its notification was delivered: %d %s\n", *level, ans.WebhookStatus, ans.WebhookAnswer)
	if ans.WebhookStatus/100 != 2 {
		return fmt.Errorf("the webhook answered %d", ans.WebhookStatus)
	}
	return nil
}

// runPick prints top-level fields (or, given as "/a/0/b", JSON pointers)
// of the JSON object on stdin on one line,
// separated by spaces: a string as is, anything else as JSON. An input
// that is not an object, or lacks a field, is an error naming it (with the
// input's start), so `X=$(curl … | pick id)` does not set X empty in silence.
func runPick(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: kukie-sandbox pick FIELD... < answer.json")
	}
	in, err := io.ReadAll(io.LimitReader(stdin, 64<<20))
	if err != nil {
		return err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(in, &obj); err != nil || obj == nil {
		return fmt.Errorf("pick: the answer is not a JSON object: %.300s", in)
	}
	values := make([]string, len(args))
	for i, f := range args {
		raw, ok := obj[f]
		if strings.HasPrefix(f, "/") {
			raw, ok = pointerIn(in, f)
		}
		if !ok {
			return fmt.Errorf("pick: no %q in the answer: %.300s", f, in)
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			values[i] = s
		} else {
			values[i] = string(raw)
		}
	}
	_, err = fmt.Fprintln(stdout, strings.Join(values, " "))
	return err
}

// pointerIn is the value at a JSON pointer (RFC 6901) of a JSON document.
func pointerIn(doc []byte, pointer string) (json.RawMessage, bool) {
	cur := json.RawMessage(doc)
	for _, tok := range strings.Split(pointer, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var obj map[string]json.RawMessage
		var list []json.RawMessage
		switch {
		case json.Unmarshal(cur, &obj) == nil && obj != nil:
			next, ok := obj[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case json.Unmarshal(cur, &list) == nil:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(list) {
				return nil, false
			}
			cur = list[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
