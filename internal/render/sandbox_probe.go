package render

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
)

// SandboxReport is what ProbeSandbox found: the sandbox renders get and,
// for auto, the namespaces the host refused with their reasons.
type SandboxReport struct {
	Mode    SandboxMode
	Sandbox Sandbox
	Missing []string
}

// probeRequest is the render a probe asks of a child: one ConfigMap from a
// directory, which needs nothing but the child itself.
var probeRequest = Request{
	Files:  map[string][]byte{"probe/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sandbox-probe}\n")},
	Source: Source{Path: "probe"},
}

// ProbeSandbox finds, once at start, the sandbox mode can have on this host
// by rendering probeRequest in real children (binary args, under lim) with
// each candidate, best first: auto tries a network namespace, then one
// inside a user namespace, then none; seccomp takes none; namespace takes
// the first namespace the host allows or fails. Every child installs the
// seccomp filter: a child that cannot is a start-up error in every mode. The
// error is one line saying what the host refused.
func ProbeSandbox(ctx context.Context, mode SandboxMode, binary string, args []string, lim Limits) (SandboxReport, error) {
	return probeSandbox(mode, namespaces, func(sb Sandbox) (Result, error) {
		l := lim
		l.Sandbox = sb
		return RunChild(ctx, binary, args, probeRequest, l)
	})
}

// probeSandbox is ProbeSandbox's decision with the child run by try; an
// error from try is a child that did not start.
func probeSandbox(mode SandboxMode, offered []Namespace, try func(Sandbox) (Result, error)) (SandboxReport, error) {
	rep := SandboxReport{Mode: mode}
	var candidates []Namespace
	switch mode {
	case SandboxAuto:
		candidates = append(slices.Clone(offered), NamespaceNone)
	case SandboxSeccomp:
		candidates = []Namespace{NamespaceNone}
	case SandboxNamespace:
		candidates = offered
	default:
		return rep, fmt.Errorf("unknown render sandbox mode %q", mode)
	}
	var refused []string
	for _, ns := range candidates {
		sb := Sandbox{Namespace: ns}
		res, err := try(sb)
		switch {
		case err != nil && ns != NamespaceNone:
			refused = append(refused, string(ns)+": "+err.Error())
			continue
		case err != nil:
			return rep, fmt.Errorf("the render child does not start: %w", err)
		case res.Error != nil && res.Error.Reason == ReasonSandboxUnavailable:
			return rep, fmt.Errorf("the render child cannot enter its sandbox (%s): this host does not let an unprivileged process "+
				"install a seccomp filter (it needs Linux with seccomp filters, and a runtime seccomp profile that allows prctl(PR_SET_NO_NEW_PRIVS) and seccomp(2)); "+
				"renders never run without it", res.Error.Message)
		case res.Error != nil:
			return rep, fmt.Errorf("the render child fails in its sandbox (%s): %s", strings.Join(sb.Layers(), ","), res.Error.Message)
		}
		if ns == NamespaceNone && mode == SandboxAuto {
			rep.Missing = append(rep.Missing, "namespace: "+namespaceRefusal(refused))
		}
		rep.Sandbox = sb
		return rep, nil
	}
	return rep, fmt.Errorf("no network namespace can be made here (%s): give the pod CAP_SYS_ADMIN or allow unprivileged user namespaces, or use auto or seccomp", namespaceRefusal(refused))
}

func namespaceRefusal(refused []string) string {
	if len(refused) == 0 {
		return "not available on " + runtime.GOOS
	}
	return strings.Join(refused, "; ")
}
