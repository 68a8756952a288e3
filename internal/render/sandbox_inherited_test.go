package render

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test children of TestSandboxInheritedSocket: the production sandbox,
// or the seccomp filter alone (no closing of inherited sockets).
const (
	inheritedChild       = "inherited"
	inheritedFilterChild = "inherited-filter"
)

// inheritedFD is where the test's connected socket lands in the child
// (cmd.ExtraFiles[0]).
const inheritedFD = 3

// inheritedSocketChildMain enters the sandbox (or, with filterOnly, only
// installs the filter) and then tries to use the socket it inherited at
// inheritedFD in every way the filter should stop. It writes the errno of
// each call (0: it succeeded) as a JSON object.
func inheritedSocketChildMain(stdout io.Writer, filterOnly bool) int {
	var err error
	if filterOnly {
		err = installSeccomp()
	} else {
		err = enterSandbox(os.LookupEnv(sandboxEnvVar))
	}
	if err != nil {
		_ = json.NewEncoder(stdout).Encode(map[string]string{"sandbox": err.Error()})
		return 2
	}
	msg := []byte("leaked through an inherited socket")
	errnos := map[string]syscall.Errno{}
	record := func(call string, err error) {
		errnos[call] = 0
		if err != nil {
			errnos[call] = err.(syscall.Errno)
		}
	}
	if !filterOnly {
		// The filter cannot tell write(2) on a socket from one on a pipe:
		// only closing the socket stops this one.
		_, err := unix.Write(inheritedFD, msg)
		record("write", err)
	}
	record("sendto", unix.Sendto(inheritedFD, msg, 0, nil))
	_, err = unix.SendmsgN(inheritedFD, msg, nil, nil, 0)
	record("sendmsg", err)
	_, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, inheritedFD, 0, 0, 0, 0, 0)
	if errno != 0 {
		record("sendmmsg", errno)
	} else {
		record("sendmmsg", nil)
	}
	_, _, err = unix.Recvfrom(inheritedFD, make([]byte, 16), unix.MSG_DONTWAIT)
	record("recvfrom", err)
	_, err = unix.GetsockoptInt(inheritedFD, unix.SOL_SOCKET, unix.SO_TYPE)
	record("getsockopt", err)
	record("connect", unix.Connect(inheritedFD, &unix.SockaddrInet4{Port: 9, Addr: [4]byte{127, 0, 0, 1}}))
	record("shutdown", unix.Shutdown(inheritedFD, unix.SHUT_WR))
	_ = json.NewEncoder(stdout).Encode(errnos)
	return 0
}

// A connected socket that reaches the child by inheritance (as one the
// server got from a supervisor without close-on-exec would) carries
// nothing: the child closes it before anything else (write fails EBADF),
// and the filter alone already fails every socket call on it (EPERM). The
// peer reads nothing but the end of the stream.
func TestSandboxInheritedSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	file, err := client.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	socketCalls := []string{"sendto", "sendmsg", "sendmmsg", "recvfrom", "getsockopt", "connect", "shutdown"}
	for _, tt := range []struct {
		child string
		want  map[string]syscall.Errno
	}{
		{inheritedChild, map[string]syscall.Errno{"write": syscall.EBADF}},
		{inheritedFilterChild, map[string]syscall.Errno{}},
	} {
		t.Run(tt.child, func(t *testing.T) {
			for _, call := range socketCalls {
				tt.want[call] = syscall.EPERM // the filter answers before the descriptor is looked at
			}
			cmd := exec.Command(self)
			cmd.Env = []string{childEnvVar + "=" + tt.child, sandboxEnvVar + "=transport,seccomp"}
			cmd.ExtraFiles = []*os.File{file}
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child: %v: %s", err, out)
			}
			var got map[string]syscall.Errno
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("child output %q: %v", out, err)
			}
			for call, want := range tt.want {
				if got[call] != want {
					t.Errorf("%s on the inherited socket: errno %d (%v), want %d (%v)", call, got[call], got[call], want, want)
				}
			}
		})
	}
	_ = file.Close()
	_ = client.Close()
	// Every copy of the client's end is closed now: the read ends at EOF.
	// The deadline only catches a hang.
	_ = peer.SetReadDeadline(time.Now().Add(time.Minute))
	data, err := io.ReadAll(peer)
	if err != nil || len(data) != 0 {
		t.Errorf("the peer read %q (%v), want nothing", data, err)
	}
}
