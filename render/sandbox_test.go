package render

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// dialChildMain is a test-only child (KUKIE_RENDER_TEST_CHILD=dial): it
// enters the sandbox exactly as ChildMain does, then tries the network the
// way a library that bypassed kustomize's loader would, as the request's
// AppName says ("raw tcp|unix ADDR" dials directly, "http ADDR" uses
// http.Get, "resolve NAME" the default resolver, "kustomize URL" builds a
// kustomization generating from URL with no refusal before the build). The Result's notes are the
// outcome: "connected", or the errno and the error.
func dialChildMain(stdin io.Reader, stdout io.Writer) int {
	// The dial runs on a thread that exists before the filter is installed:
	// TSYNC must have given it the filter too.
	ready, what, outcome := make(chan struct{}), make(chan string), make(chan error)
	go func() {
		runtime.LockOSThread()
		close(ready)
		outcome <- dial(<-what)
	}()
	<-ready
	if err := enterSandbox(os.Getenv(sandboxEnvVar)); err != nil {
		_ = json.NewEncoder(stdout).Encode(Result{Error: &Error{Code: CodeRenderFailed, Reason: ReasonSandboxUnavailable, Message: err.Error()}})
		return 2
	}
	req, err := ReadRequest(stdin)
	if err != nil {
		return 1
	}
	what <- req.AppName
	err = <-outcome
	notes := []string{"connected"}
	if err != nil {
		var errno syscall.Errno
		errors.As(err, &errno)
		notes = []string{strconv.Itoa(int(errno)), err.Error()}
	}
	_ = json.NewEncoder(stdout).Encode(Result{SourceType: "dial", Notes: notes})
	return 0
}

func dial(what string) error {
	switch f := strings.Fields(what); f[0] {
	case "raw":
		c, err := net.Dial(f[1], f[2])
		if err == nil {
			_ = c.Close()
		}
		return err
	case "http":
		res, err := http.Get("http://" + f[1] + "/")
		if err == nil {
			_ = res.Body.Close()
		}
		return err
	case "resolve":
		_, err := net.DefaultResolver.LookupHost(context.Background(), f[1])
		return err
	case "kustomize":
		// kustomize's own loader, without refuseUnsupported before it.
		fs := filesys.MakeFsInMemory()
		if err := fs.WriteFile("/app/kustomization.yaml", []byte("configMapGenerator: [{name: c, files: ["+f[1]+"]}]\n")); err != nil {
			return err
		}
		_, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/app")
		return err
	}
	return errors.New("unknown dial " + what)
}

// dialInChild runs dialChildMain through RunChild under sb.
func dialInChild(tb testing.TB, sb Sandbox, what string) Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	res, err := RunChild(ctx, "/usr/bin/env", []string{childEnvVar + "=dial", self}, Request{AppName: what}, Limits{Timeout: time.Minute, Sandbox: sb})
	if err != nil {
		tb.Fatalf("RunChild with %v: %v (namespaces need CAP_SYS_ADMIN, i.e. root, or unprivileged user namespaces: sysctl user.max_user_namespaces > 0)", sb.Layers(), err)
	}
	if res.Error != nil || len(res.Notes) == 0 {
		tb.Fatalf("dial child under %v: %+v", sb.Layers(), res)
	}
	return res
}

// Each layer alone keeps the child off a real loopback listener even where
// the one before it is bypassed: the transport and resolver refuse what
// goes through them; seccomp fails socket(2) itself (EPERM); an empty
// network namespace has no route to the server's loopback (ENETUNREACH).
// Without any layer the same dial connects, which shows the listener would
// see a connection.
func TestSandboxLayers(t *testing.T) {
	ln := mustServeCounting(t, "reached")
	addr := ln.Addr().String()
	sock := t.TempDir() + "/s.sock"
	unixLn, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unixLn.Close() })

	transportOnly := Sandbox{NoSeccomp: true}
	tests := []struct {
		name    string
		sandbox Sandbox
		what    string
		errno   syscall.Errno // 0: the note is "connected" when want is ""
		want    string        // text of the error
		reached int64
	}{
		{name: "NoLayerConnects", sandbox: transportOnly, what: "raw tcp " + addr, want: "connected", reached: 1},
		{name: "TransportRefusesHTTP", sandbox: transportOnly, what: "http " + addr, want: "remote content is not loaded"},
		{name: "TransportRefusesKustomizeLoader", sandbox: transportOnly, what: "kustomize http://" + addr + "/cmdline", want: "remote content is not loaded"},
		{name: "ResolverRefuses", sandbox: transportOnly, what: "resolve kukie-sandbox-probe.example.com", want: "remote content is not loaded"},
		{name: "SeccompRefusesTCP", sandbox: Sandbox{}, what: "raw tcp " + addr, errno: syscall.EPERM},
		{name: "SeccompRefusesUnix", sandbox: Sandbox{}, what: "raw unix " + sock, errno: syscall.EPERM},
		{name: "NetworkNamespace", sandbox: Sandbox{NoSeccomp: true, Namespace: NamespaceNetwork}, what: "raw tcp " + addr, errno: syscall.ENETUNREACH},
		{name: "UserNetworkNamespace", sandbox: Sandbox{NoSeccomp: true, Namespace: NamespaceUserNetwork}, what: "raw tcp " + addr, errno: syscall.ENETUNREACH},
		{name: "AllLayers", sandbox: Sandbox{Namespace: NamespaceNetwork}, what: "raw tcp " + addr, errno: syscall.EPERM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := ln.accepted.Load()
			res := dialInChild(t, tt.sandbox, tt.what)
			switch {
			case tt.errno != 0:
				if res.Notes[0] != strconv.Itoa(int(tt.errno)) {
					t.Errorf("dial %s under %v: %q, want errno %d (%v)", tt.what, tt.sandbox.Layers(), res.Notes, tt.errno, tt.errno)
				}
			default:
				assertContains(t, strings.Join(res.Notes, " "), tt.want)
			}
			if got := ln.accepted.Load() - before; got != tt.reached {
				t.Errorf("the listener accepted %d connections, want %d", got, tt.reached)
			}
		})
	}
}

// ProbeSandbox on this host (root, as the tests and CI run) finds every
// layer for auto and exactly one for the forced modes; each choice renders.
func TestProbeSandbox(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{childEnvVar + "=1", self}
	for _, tt := range []struct {
		mode SandboxMode
		ok   func(Sandbox) bool
	}{
		{SandboxAuto, func(s Sandbox) bool { return !s.NoSeccomp && s.Namespace != NamespaceNone }},
		{SandboxSeccomp, func(s Sandbox) bool { return s == Sandbox{} }},
		{SandboxNamespace, func(s Sandbox) bool { return s.NoSeccomp && s.Namespace != NamespaceNone }},
	} {
		t.Run(string(tt.mode), func(t *testing.T) {
			rep, err := ProbeSandbox(t.Context(), tt.mode, "/usr/bin/env", args, Limits{Timeout: time.Minute})
			if err != nil {
				t.Fatalf("ProbeSandbox: %v (the tests run as root, or with unprivileged user namespaces)", err)
			}
			if !tt.ok(rep.Sandbox) || len(rep.Missing) != 0 {
				t.Errorf("%s found %v, missing %q", tt.mode, rep.Sandbox.Layers(), rep.Missing)
			}
		})
	}
}

// probeSandbox's decisions, with the host's answers given: what each mode
// falls back to, and the one-line start-up errors.
func TestProbeSandboxDecisions(t *testing.T) {
	refused := errors.New("starting render child: fork/exec /kukie: operation not permitted")
	noSeccomp := Result{Error: &Error{Code: CodeRenderFailed, Reason: ReasonSandboxUnavailable, Message: "installing the seccomp filter: invalid argument"}}
	ok := Result{SourceType: SourceTypeDirectory}
	offered := []Namespace{NamespaceNetwork, NamespaceUserNetwork}
	tests := []struct {
		name    string
		mode    SandboxMode
		host    func(Sandbox) (Result, error)
		want    Sandbox
		missing int
		err     string
	}{
		{name: "AutoEverything", mode: SandboxAuto, host: func(Sandbox) (Result, error) { return ok, nil }, want: Sandbox{Namespace: NamespaceNetwork}},
		{name: "AutoUserNamespace", mode: SandboxAuto, host: func(s Sandbox) (Result, error) {
			if s.Namespace == NamespaceNetwork {
				return Result{}, refused
			}
			return ok, nil
		}, want: Sandbox{Namespace: NamespaceUserNetwork}},
		{name: "AutoProductionPod", mode: SandboxAuto, host: func(s Sandbox) (Result, error) {
			if s.Namespace != NamespaceNone {
				return Result{}, refused
			}
			return ok, nil
		}, want: Sandbox{}, missing: 1},
		{name: "AutoWithoutSeccomp", mode: SandboxAuto, host: func(s Sandbox) (Result, error) {
			if !s.NoSeccomp {
				return noSeccomp, nil
			}
			return ok, nil
		}, want: Sandbox{NoSeccomp: true, Namespace: NamespaceNetwork}, missing: 1},
		{name: "SeccompForced", mode: SandboxSeccomp, host: func(Sandbox) (Result, error) { return ok, nil }, want: Sandbox{}},
		{name: "SeccompUnavailable", mode: SandboxSeccomp, host: func(Sandbox) (Result, error) { return noSeccomp, nil }, err: "installing the seccomp filter"},
		{name: "NamespaceForced", mode: SandboxNamespace, host: func(Sandbox) (Result, error) { return ok, nil }, want: Sandbox{NoSeccomp: true, Namespace: NamespaceNetwork}},
		{name: "NamespaceUnavailable", mode: SandboxNamespace, host: func(Sandbox) (Result, error) { return Result{}, refused }, err: "no network namespace can be made here"},
		{name: "ChildDoesNotStart", mode: SandboxAuto, host: func(Sandbox) (Result, error) { return Result{}, refused }, err: "the render child does not start"},
		{name: "ChildFailsInSandbox", mode: SandboxAuto, host: func(Sandbox) (Result, error) { return Result{Error: failed("boom")}, nil }, err: "the render child fails in its sandbox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := probeSandbox(tt.mode, offered, tt.host)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("error %v, want one line with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.Sandbox != tt.want || len(rep.Missing) != tt.missing {
				t.Errorf("found %+v missing %q, want %+v with %d missing", rep.Sandbox, rep.Missing, tt.want, tt.missing)
			}
		})
	}
}

func TestParseSandboxMode(t *testing.T) {
	for in, want := range map[string]SandboxMode{"": SandboxAuto, "auto": SandboxAuto, " seccomp ": SandboxSeccomp, "namespace": SandboxNamespace} {
		if got, err := ParseSandboxMode(in); err != nil || got != want {
			t.Errorf("ParseSandboxMode(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"none", "off", "Seccomp"} {
		if _, err := ParseSandboxMode(in); err == nil {
			t.Errorf("ParseSandboxMode(%q) accepted", in)
		}
	}
}
