package render

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
)

// SandboxMode is KUKIE_RENDER_SANDBOX: which layers keep the render child off
// the network beyond the in-process refusal every child has.
type SandboxMode string

// The sandbox modes. Auto takes every layer the host allows; the others force
// one layer so each can be tested and run alone.
const (
	SandboxAuto      SandboxMode = "auto"
	SandboxSeccomp   SandboxMode = "seccomp"
	SandboxNamespace SandboxMode = "namespace"
)

// ParseSandboxMode reads KUKIE_RENDER_SANDBOX ("" is auto).
func ParseSandboxMode(s string) (SandboxMode, error) {
	switch m := SandboxMode(strings.TrimSpace(s)); m {
	case "":
		return SandboxAuto, nil
	case SandboxAuto, SandboxSeccomp, SandboxNamespace:
		return m, nil
	}
	return "", fmt.Errorf("unknown render sandbox mode %q", s)
}

// Namespace is the network namespace a render child starts in.
type Namespace string

// The namespaces RunChild can put a child in: none (the server's own
// network), an empty network namespace (CAP_SYS_ADMIN), or an empty network
// namespace inside a new user namespace (unprivileged user namespaces).
const (
	NamespaceNone        Namespace = ""
	NamespaceNetwork     Namespace = "network"
	NamespaceUserNetwork Namespace = "user+network"
)

// Sandbox is how RunChild isolates one child from the network, beyond the
// refusing transports and resolver the child always installs. The zero value
// is seccomp without a namespace: a caller that says nothing gets the filter.
type Sandbox struct {
	// NoSeccomp leaves out the child's seccomp filter (KUKIE_RENDER_SANDBOX=
	// namespace, or auto on a host without seccomp).
	NoSeccomp bool
	// Namespace is the network namespace the child starts in.
	Namespace Namespace
}

// Layers names the layers in force, in the words of the start-up log line.
func (s Sandbox) Layers() []string {
	layers := []string{"transport"}
	if !s.NoSeccomp {
		layers = append(layers, "seccomp")
	}
	if s.Namespace != NamespaceNone {
		layers = append(layers, "namespace:"+string(s.Namespace))
	}
	return layers
}

// sandboxEnvVar carries the layers (Sandbox.Layers, comma-separated) to the
// child, whose environment is otherwise empty: "seccomp" in it, or the
// variable missing, makes the child install its filter before it reads the
// request. It is not the server's KUKIE_RENDER_SANDBOX, which names a mode.
const sandboxEnvVar = "KUKIE_RENDER_LAYERS"

// ReasonSandboxUnavailable is the Error.Reason of a child that could not
// install the sandbox it was asked for; it renders nothing.
const ReasonSandboxUnavailable = "render_sandbox_unavailable"

// applySandbox is RunChild's part of the sandbox: the layers in the child's
// environment and the namespace in its clone flags.
func applySandbox(cmd *exec.Cmd, sb Sandbox) {
	cmd.Env = append(slices.Clip(cmd.Env), sandboxEnvVar+"="+strings.Join(sb.Layers(), ","))
	setNamespace(cmd.SysProcAttr, sb.Namespace)
}

// enterSandbox is the child's first act, before it reads its request: every
// HTTP transport and the resolver refuse, then (unless the parent left it
// out) the seccomp filter makes socket(2) fail for every family.
func enterSandbox(layers string) error {
	refuseNetworkInProcess()
	if layers != "" && !slices.Contains(strings.Split(layers, ","), "seccomp") {
		return nil
	}
	if err := installSeccomp(); err != nil {
		return fmt.Errorf("installing the seccomp filter: %w", err)
	}
	return nil
}

// remoteNotLoaded is the error of anything in the child that tries to reach
// the network.
type remoteNotLoaded struct{ target string }

func (e remoteNotLoaded) Error() string {
	return "remote content is not loaded (" + e.target + "): renders have no network"
}

// refuseNetworkInProcess is layer 1: http.DefaultTransport (which kustomize's
// loader and any zero http.Client use), http.DefaultClient and
// net.DefaultResolver refuse before dialling, with an error that says why.
// Clones of the default transport keep the refusing proxy and dialers.
func refuseNetworkInProcess() {
	dial := func(_ context.Context, network, addr string) (net.Conn, error) {
		return nil, remoteNotLoaded{network + " " + addr}
	}
	t := &http.Transport{
		Proxy: func(r *http.Request) (*url.URL, error) {
			return nil, remoteNotLoaded{r.URL.Redacted()}
		},
		DialContext:    dial,
		DialTLSContext: dial,
	}
	http.DefaultTransport = t
	http.DefaultClient = &http.Client{Transport: t}
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: dial}
}
