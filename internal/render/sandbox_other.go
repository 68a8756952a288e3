//go:build !linux

package render

import (
	"errors"
	"runtime"
	"syscall"
)

// installSeccomp has no filter to install outside Linux.
func installSeccomp() error {
	return errors.New("seccomp is not available on " + runtime.GOOS)
}

// closeInheritedSockets has nothing to do outside Linux: installSeccomp
// fails there, so no child renders.
func closeInheritedSockets() error { return nil }

// namespaces is empty outside Linux: ProbeSandbox offers no namespace.
var namespaces []Namespace

// setNamespace is never asked for a namespace outside Linux.
func setNamespace(*syscall.SysProcAttr, Namespace) {}
