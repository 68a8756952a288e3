package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"syscall"
	"time"
	"unsafe"
)

// Limits bound one child render.
type Limits struct {
	// Timeout kills the child's process group; zero means no timeout.
	Timeout time.Duration
	// MaxOutputBytes caps what is read from the child's stdout (the JSON
	// Result); zero means no cap.
	MaxOutputBytes int64
	// MaxMemoryBytes is the child's address-space limit (RLIMIT_AS); it must
	// leave room for the Go runtime's reservations. Zero means no limit.
	MaxMemoryBytes int64
	// Sandbox keeps the child off the network (ProbeSandbox finds what the
	// host allows); the zero value is seccomp without a namespace.
	Sandbox Sandbox
}

// unreachableProxy is where the child's HTTP clients would send any request:
// nothing listens on port 9 (discard) on loopback.
const unreachableProxy = "http://127.0.0.1:9"

// childEnv is the child's whole environment: no PATH (no git, no helm, no
// kustomize plugins) and a proxy that cannot be reached.
var childEnv = []string{
	"PATH=",
	"HTTPS_PROXY=" + unreachableProxy,
	"HTTP_PROXY=" + unreachableProxy,
	"https_proxy=" + unreachableProxy,
	"http_proxy=" + unreachableProxy,
	"NO_PROXY=",
	"no_proxy=",
}

// ChildMain is the render child's whole life: it reads one JSON Request from
// stdin, renders it and writes one JSON Result to stdout. It returns the
// process exit code.
func ChildMain(stdin io.Reader, stdout io.Writer) int {
	if err := enterSandbox(os.Getenv(sandboxEnvVar)); err != nil {
		_ = json.NewEncoder(stdout).Encode(Result{Error: &Error{Code: CodeRenderFailed, Reason: ReasonSandboxUnavailable, Message: err.Error()}})
		return 2
	}
	var req Request
	if err := json.NewDecoder(stdin).Decode(&req); err != nil {
		_ = json.NewEncoder(stdout).Encode(Result{Error: failed("reading render request: %v", err)})
		return 2
	}
	// The parent sets RLIMIT_AS before sending the request; a soft Go memory
	// limit below it makes the collector work before allocations fail.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err == nil && lim.Cur != rlimInfinity {
		debug.SetMemoryLimit(int64(lim.Cur / 2))
	}
	// Libraries that print to os.Stdout must not corrupt the one Result the
	// parent reads; what they print goes to stderr instead.
	saved := os.Stdout
	os.Stdout = os.Stderr
	res := Render(req)
	os.Stdout = saved
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

const rlimInfinity = ^uint64(0)

// RunChild renders req in a child process, `binary args...` (in production the
// server's own executable with "render"), with an empty environment except an
// unreachable proxy and the sandbox's layers, in its own process group, under
// lim (and in lim.Sandbox). A timeout or an
// oversized output is a Result with a render_failed error; the returned error
// is for failures to run the child at all and for ctx ending.
func RunChild(ctx context.Context, binary string, args []string, req Request, lim Limits) (Result, error) {
	input, err := json.Marshal(req)
	if err != nil {
		return Result{}, fmt.Errorf("encoding render request: %w", err)
	}
	runCtx := ctx
	if lim.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, lim.Timeout)
		defer cancel()
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = childEnv
	cmd.Dir = "/"
	// Its own group, so a kill reaches anything it starts; killed with the
	// server should the server die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	applySandbox(cmd, lim.Sandbox)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Result{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, err
	}
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("starting render child: %w", err)
	}
	pid := cmd.Process.Pid
	kill := func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }
	if lim.MaxMemoryBytes > 0 {
		if err := setAddressSpaceLimit(pid, uint64(lim.MaxMemoryBytes)); err != nil {
			kill()
			_ = cmd.Wait()
			return Result{}, fmt.Errorf("limiting render child memory: %w", err)
		}
	}

	// Kill the whole group when the deadline passes or ctx ends; reading
	// stdout then ends too.
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-runCtx.Done():
			kill()
		case <-done:
		}
	}()
	go func() {
		_, _ = stdin.Write(input)
		_ = stdin.Close()
	}()

	var reader io.Reader = stdout
	if lim.MaxOutputBytes > 0 {
		reader = io.LimitReader(stdout, lim.MaxOutputBytes+1)
	}
	out, readErr := io.ReadAll(reader)
	tooLarge := lim.MaxOutputBytes > 0 && int64(len(out)) > lim.MaxOutputBytes
	if tooLarge {
		kill()
	}
	waitErr := cmd.Wait()
	close(done)
	<-stopped

	switch {
	case ctx.Err() != nil:
		return Result{}, ctx.Err()
	case runCtx.Err() != nil:
		return Result{Error: failed("render timed out after %s and was stopped", lim.Timeout)}, nil
	case tooLarge:
		return Result{Error: failed("render output exceeds the limit of %d bytes", lim.MaxOutputBytes)}, nil
	case readErr != nil:
		return Result{}, fmt.Errorf("reading render child output: %w", readErr)
	}
	var res Result
	if err := json.Unmarshal(out, &res); err != nil || (res.Error == nil && res.SourceType == "") {
		msg := "render process failed"
		var exitErr *exec.ExitError
		if errors.As(waitErr, &exitErr) {
			msg += " (" + exitErr.ProcessState.String() + ")"
		}
		if lim.MaxMemoryBytes > 0 {
			msg += fmt.Sprintf("; it may have exceeded the memory limit of %d bytes", lim.MaxMemoryBytes)
		}
		return Result{Error: failed("%s", msg)}, nil
	}
	return res, nil
}

// setAddressSpaceLimit sets RLIMIT_AS of another process (prlimit(2)).
func setAddressSpaceLimit(pid int, limit uint64) error {
	r := syscall.Rlimit{Cur: limit, Max: limit}
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_AS), uintptr(unsafe.Pointer(&r)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
