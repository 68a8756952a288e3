package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The sandbox's kube-apiserver and etcd are started by envtest, which offers
// no hook on how it starts them. So the sandbox points envtest at a folder of
// links to its own binary under their names: started under such a name, the
// binary asks the kernel to kill it when the sandbox dies (PR_SET_PDEATHSIG,
// which survives exec), then execs the real binary. A SIGKILLed sandbox (or a
// closed terminal) leaves no control plane running.
const (
	envRealAssets = "KUKIE_SANDBOX_REAL_ASSETS"
	envParentPID  = "KUKIE_SANDBOX_PID"
)

var shimmed = []string{"kube-apiserver", "etcd", "kubectl"}

// execShimmed is the shim: when this binary runs as one of shimmed, it
// never returns.
func execShimmed() {
	name := filepath.Base(os.Args[0])
	real := os.Getenv(envRealAssets)
	if real == "" || !isShimmed(name) {
		return
	}
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "kukie-sandbox (as %s): %v\n", name, err)
		os.Exit(1)
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		fail(err)
	}
	// The sandbox may have died before the signal was asked for.
	if want, err := strconv.Atoi(os.Getenv(envParentPID)); err != nil || os.Getppid() != want {
		fail(fmt.Errorf("the sandbox that started it is gone"))
	}
	path := filepath.Join(real, name)
	fail(syscall.Exec(path, append([]string{path}, os.Args[1:]...), os.Environ()))
}

func isShimmed(name string) bool {
	for _, s := range shimmed {
		if s == name {
			return true
		}
	}
	return false
}

// shimAssets makes dir a folder of links to this binary named after the
// real assets in real, and sets what the shim reads. It returns dir.
func shimAssets(dir, real string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	for _, name := range shimmed {
		if _, err := os.Stat(filepath.Join(real, name)); err != nil {
			continue // kubectl is optional
		}
		link := filepath.Join(dir, name)
		_ = os.Remove(link)
		if err := os.Symlink(self, link); err != nil {
			return "", err
		}
	}
	if err := os.Setenv(envRealAssets, real); err != nil {
		return "", err
	}
	return dir, os.Setenv(envParentPID, strconv.Itoa(os.Getpid()))
}
