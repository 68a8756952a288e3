package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
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
	// MaxMemoryBytes caps the child's private writable memory (RLIMIT_DATA:
	// its heap, not the Go runtime's address-space reservations), and half
	// of it is the child's GOMEMLIMIT. Zero means no limit; see
	// ChildMemoryLimit for how it is chosen and MinChildMemoryBytes.
	MaxMemoryBytes int64
	// Sandbox is the namespace the child starts in (ProbeSandbox finds what
	// the host allows); the zero value is none. The seccomp filter is not
	// optional: every child installs it.
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

// ChildMain is the render child's whole life: it reads one Request stream
// (WriteRequest) from stdin, renders it and writes one JSON Result to
// stdout. It returns the process exit code.
func ChildMain(stdin io.Reader, stdout io.Writer) int {
	if err := enterSandbox(os.LookupEnv(sandboxEnvVar)); err != nil {
		_ = json.NewEncoder(stdout).Encode(Result{Error: &Error{Code: CodeRenderFailed, Reason: ReasonSandboxUnavailable, Message: err.Error()}})
		return 2
	}
	req, err := ReadRequest(stdin)
	if err != nil {
		_ = json.NewEncoder(stdout).Encode(Result{Error: failed("reading render request: %v", err)})
		return 2
	}
	// Libraries that print to os.Stdout must not corrupt the one Result the
	// parent reads; what they print goes to stderr instead.
	saved := os.Stdout
	os.Stdout = os.Stderr
	var res Result
	if req.Trace {
		trace := TraceHelm(req)
		res.Trace, res.SourceType = &trace, SourceTypeHelm
	} else {
		res = Render(req)
	}
	if req.Mask && !req.Trace {
		res = maskResult(res)
	}
	os.Stdout = saved
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

// RunChild renders req in a child process, `binary args...` (in production the
// server's own executable with "render"), with an empty environment except an
// unreachable proxy and the sandbox's layers, in its own process group, under
// lim (and in lim.Sandbox). A timeout or an
// oversized output is a Result with a render_failed error (a timeout and a
// child that died without a result also carry a Reason, ReasonTimeout,
// ReasonMemoryLimit or ReasonProcessFailed); the returned error
// is for failures to run the child at all and for ctx ending.
func RunChild(ctx context.Context, binary string, args []string, req Request, lim Limits) (Result, error) {
	runCtx := ctx
	if lim.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, lim.Timeout)
		defer cancel()
	}
	cmd := childCommand(binary, args, lim)
	stdin, stdout, kill, err := startChild(cmd, lim)
	if err != nil {
		return Result{}, err
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
	// The request streams while the child reads it; a child that dies
	// early ends the write with a broken pipe, and Wait closes the pipe.
	written := make(chan error, 1)
	go func() {
		err := WriteRequest(stdin, req)
		_ = stdin.Close()
		written <- err
	}()

	out, tooLarge, readErr := readChildOutput(stdout, lim.MaxOutputBytes, kill)
	waitErr := cmd.Wait()
	close(done)
	<-stopped
	writeErr := <-written

	switch {
	case ctx.Err() != nil:
		return Result{}, ctx.Err()
	case runCtx.Err() != nil:
		e := failed("render timed out after %s and was stopped", lim.Timeout)
		e.Reason = ReasonTimeout
		return Result{Error: e}, nil
	case tooLarge:
		return Result{Error: failed("render output exceeds the limit of %d bytes", lim.MaxOutputBytes)}, nil
	case readErr != nil:
		return Result{}, fmt.Errorf("reading render child output: %w", readErr)
	case writeErr != nil && !errors.Is(writeErr, syscall.EPIPE) && !errors.Is(writeErr, os.ErrClosed):
		// A tree beyond the stream's caps never reaches the child.
		return Result{Error: failed("%v", writeErr)}, nil
	}
	return decodeChildResult(out, waitErr, lim.MaxMemoryBytes), nil
}

// childCommand is the child's command, not started: `binary args...` with
// childEnv (and a GOMEMLIMIT under a memory limit), in /, in its own
// process group and in lim.Sandbox.
func childCommand(binary string, args []string, lim Limits) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = childEnv
	if lim.MaxMemoryBytes > 0 {
		// A soft limit below the hard one makes the child's collector work
		// before its allocations fail; the runtime reads it at start.
		cmd.Env = append(slices.Clone(childEnv), "GOMEMLIMIT="+strconv.FormatInt(lim.MaxMemoryBytes/2, 10))
	}
	cmd.Dir = "/"
	// Its own group, so a kill reaches anything it starts; killed with the
	// server should the server die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	applySandbox(cmd, lim.Sandbox)
	return cmd
}

// startChild starts cmd with pipes to its stdin and stdout and sets its
// memory limit; kill kills its process group. A child whose limit cannot be
// set is killed and waited for.
func startChild(cmd *exec.Cmd, lim Limits) (stdin io.WriteCloser, stdout io.ReadCloser, kill func(), err error) {
	stdin, err = cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	stdout, err = cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, fmt.Errorf("starting render child: %w", err)
	}
	pid := cmd.Process.Pid
	kill = func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }
	if lim.MaxMemoryBytes > 0 {
		if err := setDataLimit(pid, uint64(lim.MaxMemoryBytes)); err != nil {
			kill()
			_ = cmd.Wait()
			return nil, nil, nil, fmt.Errorf("limiting render child memory: %w", err)
		}
	}
	return stdin, stdout, kill, nil
}

// readChildOutput reads the child's stdout, at most maxBytes+1 of it under
// a cap (zero: none); an output over the cap is tooLarge and kills the
// child.
func readChildOutput(stdout io.Reader, maxBytes int64, kill func()) (out []byte, tooLarge bool, err error) {
	reader := stdout
	if maxBytes > 0 {
		reader = io.LimitReader(stdout, maxBytes+1)
	}
	out, err = io.ReadAll(reader)
	tooLarge = maxBytes > 0 && int64(len(out)) > maxBytes
	if tooLarge {
		kill()
	}
	return out, tooLarge, err
}

// decodeChildResult is the Result the child wrote, or a render_failed
// error with ReasonProcessFailed (ReasonMemoryLimit under a memory limit)
// when out holds none.
func decodeChildResult(out []byte, waitErr error, maxMemoryBytes int64) Result {
	var res Result
	if err := json.Unmarshal(out, &res); err != nil || (res.Error == nil && res.SourceType == "") {
		msg, reason := "render process failed", ReasonProcessFailed
		var exitErr *exec.ExitError
		if errors.As(waitErr, &exitErr) {
			msg += " (" + exitErr.ProcessState.String() + ")"
		}
		if maxMemoryBytes > 0 {
			msg += fmt.Sprintf("; it may have exceeded the memory limit of %d bytes", maxMemoryBytes)
			reason = ReasonMemoryLimit
		}
		e := failed("%s", msg)
		e.Reason = reason
		return Result{Error: e}
	}
	return res
}

// setDataLimit sets RLIMIT_DATA of another process (prlimit(2)). Unlike
// RLIMIT_AS it does not count the Go runtime's PROT_NONE reservations (about
// 1.3 GB of address space in an idle child of 55 MB resident), so it bounds
// what the container's memory accounting sees.
func setDataLimit(pid int, limit uint64) error {
	r := syscall.Rlimit{Cur: limit, Max: limit}
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_DATA), uintptr(unsafe.Pointer(&r)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
