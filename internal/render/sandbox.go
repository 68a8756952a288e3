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

// SandboxMode is KUKIE_RENDER_SANDBOX: whether the render child also starts
// in an empty network namespace. Every mode has the in-process refusal and,
// on Linux, the seccomp filter; no mode leaves the filter out.
type SandboxMode string

// The sandbox modes. Auto adds a namespace where the host allows one;
// seccomp never does; namespace requires one.
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

// Sandbox is how RunChild isolates one child from the network beyond what
// every child does itself (refusing transports and resolver, closing
// inherited sockets, the seccomp filter): the namespace it starts in. There
// is deliberately no way to leave the filter out: a network namespace does
// not isolate path-named Unix sockets, and the filter is what stops those.
type Sandbox struct {
	// Namespace is the network namespace the child starts in.
	Namespace Namespace
}

// Layers names the layers in force, in the words of the start-up log line.
func (s Sandbox) Layers() []string {
	layers := []string{"transport", "seccomp"}
	if s.Namespace != NamespaceNone {
		layers = append(layers, "namespace:"+string(s.Namespace))
	}
	return layers
}

// sandboxEnvVar carries the layers (Sandbox.Layers, comma-separated) to the
// child, whose environment is otherwise empty. The child installs its
// filter whatever the variable says, and refuses to render when the
// variable is set to anything RunChild does not write (checkLayers). It is
// not the server's KUKIE_RENDER_SANDBOX, which names a mode.
const sandboxEnvVar = "KUKIE_RENDER_LAYERS"

// ReasonSandboxUnavailable is the Error.Reason of a child that could not
// enter its sandbox (or was told of layers it does not know); it renders
// nothing.
const ReasonSandboxUnavailable = "render_sandbox_unavailable"

// applySandbox is RunChild's part of the sandbox: the layers in the child's
// environment and the namespace in its clone flags.
func applySandbox(cmd *exec.Cmd, sb Sandbox) {
	cmd.Env = append(slices.Clip(cmd.Env), sandboxEnvVar+"="+strings.Join(sb.Layers(), ","))
	setNamespace(cmd.SysProcAttr, sb.Namespace)
}

// enterSandbox is the child's first act, before it reads its request: every
// HTTP transport and the resolver refuse, every socket it inherited is
// closed, and the seccomp filter makes socket(2) and the other socket calls
// fail. Only then does it look at layers (the value of sandboxEnvVar; set
// says whether there is one), and it fails closed: a value RunChild would
// not write is an error, so a child never renders under layers it does not
// understand. A missing variable (a child run by hand) means no namespace.
func enterSandbox(layers string, set bool) error {
	refuseNetworkInProcess()
	if err := closeInheritedSockets(); err != nil {
		return fmt.Errorf("closing inherited sockets: %w", err)
	}
	if err := installSeccomp(); err != nil {
		return fmt.Errorf("installing the seccomp filter: %w", err)
	}
	if set {
		return checkLayers(layers)
	}
	return nil
}

// checkLayers accepts exactly the layer lists RunChild writes.
func checkLayers(layers string) error {
	for _, ns := range []Namespace{NamespaceNone, NamespaceNetwork, NamespaceUserNetwork} {
		if layers == strings.Join(Sandbox{Namespace: ns}.Layers(), ",") {
			return nil
		}
	}
	return fmt.Errorf("%s=%q is not a list of layers this child knows; not rendering", sandboxEnvVar, layers)
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
