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
	"slices"
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
// kustomization generating from URL with no refusal before the build). The
// Result's notes are the outcome: "connected", or the errno and the error.
//
// With unfiltered (KUKIE_RENDER_TEST_CHILD=dial-unfiltered) it installs only
// the in-process refusal, so that each other layer can be shown alone. No
// production child can be told to do that: ChildMain always filters.
func dialChildMain(stdin io.Reader, stdout io.Writer, unfiltered bool) int {
	// The dial runs on a thread that exists before the filter is installed:
	// TSYNC must have given it the filter too.
	ready, what, outcome := make(chan struct{}), make(chan string), make(chan error)
	go func() {
		runtime.LockOSThread()
		close(ready)
		outcome <- dial(<-what)
	}()
	<-ready
	if unfiltered {
		refuseNetworkInProcess()
	} else if err := enterSandbox(os.LookupEnv(sandboxEnvVar)); err != nil {
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

// A test child: the production child (ChildMain's sandbox), or one with
// the in-process refusal only, to show the other layers alone.
const (
	filteredChild   = "dial"
	unfilteredChild = "dial-unfiltered"
)

// dialInChild runs dialChildMain (child says which) through RunChild under sb.
func dialInChild(tb testing.TB, child string, sb Sandbox, what string) Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	res, err := RunChild(ctx, "/usr/bin/env", []string{childEnvVar + "=" + child, self}, Request{AppName: what}, Limits{Timeout: time.Minute, Sandbox: sb})
	if err != nil {
		tb.Fatalf("RunChild (%s) with %v: %v (namespaces need CAP_SYS_ADMIN, i.e. root, or unprivileged user namespaces: sysctl user.max_user_namespaces > 0)", child, sb.Layers(), err)
	}
	if res.Error != nil || len(res.Notes) == 0 {
		tb.Fatalf("%s child under %v: %+v", child, sb.Layers(), res)
	}
	return res
}

// Each layer alone keeps the child off a real loopback listener even where
// the one before it is bypassed: the transport and resolver refuse what
// goes through them; seccomp fails socket(2) itself (EPERM); an empty
// network namespace has no route to the server's loopback (ENETUNREACH) but
// does not hide a Unix socket on the filesystem, which is why the filter is
// never left out. Without any layer the same dial connects, which shows the
// listener would see a connection.
func TestSandboxLayers(t *testing.T) {
	ln := mustServeCounting(t, "reached")
	addr := ln.Addr().String()
	sock := t.TempDir() + "/s.sock"
	unixLn, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unixLn.Close() })

	tests := []struct {
		name    string
		child   string
		sandbox Sandbox
		what    string
		errno   syscall.Errno // 0: the note is "connected" when want is ""
		want    string        // text of the error
		reached int64
	}{
		{name: "NoLayerConnects", child: unfilteredChild, what: "raw tcp " + addr, want: "connected", reached: 1},
		{name: "TransportRefusesHTTP", child: unfilteredChild, what: "http " + addr, want: "remote content is not loaded"},
		{name: "TransportRefusesKustomizeLoader", child: unfilteredChild, what: "kustomize http://" + addr + "/cmdline", want: "remote content is not loaded"},
		{name: "ResolverRefuses", child: unfilteredChild, what: "resolve kukie-sandbox-probe.example.com", want: "remote content is not loaded"},
		{name: "SeccompRefusesTCP", child: filteredChild, what: "raw tcp " + addr, errno: syscall.EPERM},
		{name: "SeccompRefusesUnix", child: filteredChild, what: "raw unix " + sock, errno: syscall.EPERM},
		{name: "NetworkNamespace", child: unfilteredChild, sandbox: Sandbox{Namespace: NamespaceNetwork}, what: "raw tcp " + addr, errno: syscall.ENETUNREACH},
		{name: "UserNetworkNamespace", child: unfilteredChild, sandbox: Sandbox{Namespace: NamespaceUserNetwork}, what: "raw tcp " + addr, errno: syscall.ENETUNREACH},
		{name: "NetworkNamespaceAloneReachesUnixSockets", child: unfilteredChild, sandbox: Sandbox{Namespace: NamespaceNetwork}, what: "raw unix " + sock, want: "connected"},
		{name: "AllLayers", child: filteredChild, sandbox: Sandbox{Namespace: NamespaceNetwork}, what: "raw tcp " + addr, errno: syscall.EPERM},
		{name: "AllLayersUserNamespace", child: filteredChild, sandbox: Sandbox{Namespace: NamespaceUserNetwork}, what: "raw unix " + sock, errno: syscall.EPERM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := ln.accepted.Load()
			res := dialInChild(t, tt.child, tt.sandbox, tt.what)
			switch {
			case tt.errno != 0:
				if res.Notes[0] != strconv.Itoa(int(tt.errno)) {
					t.Errorf("dial %s (%s child) under %v: %q, want errno %d (%v)", tt.what, tt.child, tt.sandbox.Layers(), res.Notes, tt.errno, tt.errno)
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

// KUKIE_RENDER_SANDBOX=namespace is a namespace on top of the seccomp
// filter, not instead of it (review2 finding 6): the sandbox the probe picks
// for it keeps a child in an empty network namespace off a path-named Unix
// socket, which the namespace alone does not (TestSandboxLayers).
func TestSandboxNamespaceModeRefusesUnixSockets(t *testing.T) {
	sock := t.TempDir() + "/s.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []SandboxMode{SandboxNamespace, SandboxAuto} {
		t.Run(string(mode), func(t *testing.T) {
			rep, err := ProbeSandbox(t.Context(), mode, "/usr/bin/env", []string{childEnvVar + "=1", self}, Limits{Timeout: time.Minute})
			if err != nil {
				t.Fatalf("ProbeSandbox: %v (the tests run as root, or with unprivileged user namespaces)", err)
			}
			if rep.Sandbox.Namespace == NamespaceNone || !slices.Contains(rep.Sandbox.Layers(), "seccomp") {
				t.Fatalf("%s found %v, want seccomp and a namespace", mode, rep.Sandbox.Layers())
			}
			res := dialInChild(t, filteredChild, rep.Sandbox, "raw unix "+sock)
			if res.Notes[0] != strconv.Itoa(int(syscall.EPERM)) {
				t.Errorf("a child under %v dialled a Unix socket: %q, want EPERM", rep.Sandbox.Layers(), res.Notes)
			}
		})
	}
}

// The child fails closed on a layer list it does not know (review2 finding
// 7): whatever KUKIE_RENDER_LAYERS says, it installs the filter, and a value
// RunChild does not write is render_failed (render_sandbox_unavailable)
// before the request is read. A missing value still filters.
func TestChildRefusesUnknownLayers(t *testing.T) {
	ln := mustServeCounting(t, "reached")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, env ...string) Result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// env's own assignments come after the parent's environment: they win.
		args := append(append(slices.Clone(env), childEnvVar+"="+filteredChild), self)
		res, err := RunChild(ctx, "/usr/bin/env", args, Request{AppName: "raw tcp " + ln.Addr().String()}, Limits{Timeout: time.Minute})
		if err != nil {
			t.Fatalf("RunChild: %v", err)
		}
		return res
	}
	for _, layers := range []string{"transport;seccomp", "transport", "", "none", "seccomp", " transport,seccomp",
		"transport,seccomp,", "transport,seccomp,namespace:bogus", "transport,namespace:network", "TRANSPORT,SECCOMP"} {
		t.Run(strconv.Quote(layers), func(t *testing.T) {
			res := run(t, sandboxEnvVar+"="+layers)
			if res.Error == nil || res.Error.Code != CodeRenderFailed || res.Error.Reason != ReasonSandboxUnavailable {
				t.Errorf("a child told %s=%q: %+v, want render_failed (%s)", sandboxEnvVar, layers, res, ReasonSandboxUnavailable)
			}
		})
	}
	t.Run("Missing", func(t *testing.T) {
		res := run(t, "-u", sandboxEnvVar)
		if res.Error != nil || len(res.Notes) == 0 || res.Notes[0] != strconv.Itoa(int(syscall.EPERM)) {
			t.Errorf("a child without %s: %+v, want the dial refused with EPERM", sandboxEnvVar, res)
		}
	})
	if n := ln.accepted.Load(); n != 0 {
		t.Errorf("the listener accepted %d connections, want none", n)
	}
}

// ProbeSandbox on this host (root, as the tests and CI run) finds a
// namespace for auto and namespace and none for seccomp; each choice renders,
// and every child filters.
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
		{SandboxAuto, func(s Sandbox) bool { return s.Namespace != NamespaceNone }},
		{SandboxSeccomp, func(s Sandbox) bool { return s == Sandbox{} }},
		{SandboxNamespace, func(s Sandbox) bool { return s.Namespace != NamespaceNone }},
	} {
		t.Run(string(tt.mode), func(t *testing.T) {
			rep, err := ProbeSandbox(t.Context(), tt.mode, "/usr/bin/env", args, Limits{Timeout: time.Minute})
			if err != nil {
				t.Fatalf("ProbeSandbox: %v (the tests run as root, or with unprivileged user namespaces)", err)
			}
			if !tt.ok(rep.Sandbox) || len(rep.Missing) != 0 || !slices.Contains(rep.Sandbox.Layers(), "seccomp") {
				t.Errorf("%s found %v, missing %q", tt.mode, rep.Sandbox.Layers(), rep.Missing)
			}
		})
	}
}

// probeSandbox's decisions, with the host's answers given: what each mode
// falls back to, and the one-line start-up errors. A host where the child
// cannot install its filter fails start-up in every mode (review2 finding
// 7), whatever namespace it allows.
func TestProbeSandboxDecisions(t *testing.T) {
	refused := errors.New("starting render child: fork/exec /kukie: operation not permitted")
	noSeccomp := Result{Error: &Error{Code: CodeRenderFailed, Reason: ReasonSandboxUnavailable, Message: "installing the seccomp filter: invalid argument"}}
	ok := Result{SourceType: SourceTypeDirectory}
	offered := []Namespace{NamespaceNetwork, NamespaceUserNetwork}
	const seccompRefused = "this host does not let an unprivileged process install a seccomp filter"
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
		{name: "AutoWithoutSeccomp", mode: SandboxAuto, host: func(Sandbox) (Result, error) { return noSeccomp, nil }, err: seccompRefused},
		{name: "AutoWithoutSeccompOrNamespace", mode: SandboxAuto, host: func(s Sandbox) (Result, error) {
			if s.Namespace != NamespaceNone {
				return Result{}, refused
			}
			return noSeccomp, nil
		}, err: seccompRefused},
		{name: "SeccompForced", mode: SandboxSeccomp, host: func(Sandbox) (Result, error) { return ok, nil }, want: Sandbox{}},
		{name: "SeccompUnavailable", mode: SandboxSeccomp, host: func(Sandbox) (Result, error) { return noSeccomp, nil }, err: seccompRefused},
		{name: "NamespaceForced", mode: SandboxNamespace, host: func(Sandbox) (Result, error) { return ok, nil }, want: Sandbox{Namespace: NamespaceNetwork}},
		{name: "NamespaceWithoutSeccomp", mode: SandboxNamespace, host: func(Sandbox) (Result, error) { return noSeccomp, nil }, err: seccompRefused},
		{name: "NamespaceUnavailable", mode: SandboxNamespace, host: func(Sandbox) (Result, error) { return Result{}, refused }, err: "no network namespace can be made here"},
		{name: "ChildDoesNotStart", mode: SandboxAuto, host: func(Sandbox) (Result, error) { return Result{}, refused }, err: "the render child does not start"},
		{name: "ChildFailsInSandbox", mode: SandboxAuto, host: func(Sandbox) (Result, error) { return Result{Error: failed("boom")}, nil }, err: "the render child fails in its sandbox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tried []Sandbox
			rep, err := probeSandbox(tt.mode, offered, func(sb Sandbox) (Result, error) {
				tried = append(tried, sb)
				return tt.host(sb)
			})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("error %v (found %v), want one line with %q", err, rep.Sandbox.Layers(), tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.Sandbox != tt.want || len(rep.Missing) != tt.missing {
				t.Errorf("found %+v missing %q, want %+v with %d missing", rep.Sandbox, rep.Missing, tt.want, tt.missing)
			}
			for _, sb := range tried {
				if !slices.Contains(sb.Layers(), "seccomp") {
					t.Errorf("probed a sandbox without seccomp: %v", sb.Layers())
				}
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
