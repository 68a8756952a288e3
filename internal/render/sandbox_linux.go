package render

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// auditArch is the seccomp architecture of this build's system calls: a
// call made through another ABI (i386 int 0x80 on amd64, x32) fails.
var auditArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}

// deniedSyscalls fail with EPERM in the child: socket(2) and socketpair(2)
// for every family (the child talks to its parent over inherited pipes with
// read and write, and needs no socket); every call that works only on a
// socket, so a socket the child got anyway (inherited from a supervisor and
// missed by closeInheritedSockets) cannot connect, listen, accept, send or
// receive by them; io_uring (which can open sockets without socket(2)); and
// the calls that would borrow a socket or memory from another process of
// the same user (pidfd_getfd, ptrace, process_vm_readv/writev). write(2) on
// a socket cannot be told from write(2) on a pipe here, which is why the
// child closes inherited sockets first.
var deniedSyscalls = []uint32{
	unix.SYS_SOCKET, unix.SYS_SOCKETPAIR,
	unix.SYS_CONNECT, unix.SYS_BIND, unix.SYS_LISTEN, unix.SYS_ACCEPT, unix.SYS_ACCEPT4,
	unix.SYS_SENDTO, unix.SYS_SENDMSG, unix.SYS_SENDMMSG,
	unix.SYS_RECVFROM, unix.SYS_RECVMSG, unix.SYS_RECVMMSG,
	unix.SYS_GETSOCKOPT, unix.SYS_SETSOCKOPT, unix.SYS_GETSOCKNAME, unix.SYS_GETPEERNAME, unix.SYS_SHUTDOWN,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_PIDFD_GETFD, unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
}

// closeInheritedSockets closes every socket among the child's descriptors
// above stderr. exec closes only descriptors marked close-on-exec, so a
// socket the server inherited without that mark (a supervisor's listening
// socket, say) would reach the child, and write(2) on it sends. The runtime's
// own descriptors (epoll, eventfd, pipes) are not sockets and stay.
func closeInheritedSockets() error {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	_ = d.Close()
	if err != nil {
		return err
	}
	for _, name := range names {
		fd, err := strconv.Atoi(name)
		if err != nil || fd <= 2 {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			continue // the listing's own descriptor, closed by now
		}
		if st.Mode&unix.S_IFMT == unix.S_IFSOCK {
			if err := unix.Close(fd); err != nil {
				return fmt.Errorf("descriptor %d: %w", fd, err)
			}
		}
	}
	return nil
}

// x32SyscallBit marks x32-ABI system calls on amd64.
const x32SyscallBit = 0x40000000

// seccompProgram is the child's filter: a call of another architecture or
// ABI, or one of deniedSyscalls, fails with EPERM; everything else is allowed.
func seccompProgram(arch uint32) []bpf.Instruction {
	deny := bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)}
	allow := bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	// Layout: [0] load arch, [1] arch check, [2] load nr, [3] x32 check,
	// [4..4+n) one check per denied call, then allow, then deny. Each jump
	// counts the instructions it skips.
	n := len(deniedSyscalls)
	denyAt := 4 + n + 1
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipFalse: uint8(denyAt - 2)},
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: x32SyscallBit, SkipTrue: uint8(denyAt - 4)},
	}
	for i, nr := range deniedSyscalls {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: uint8(denyAt - (4 + i) - 1)})
	}
	return append(prog, allow, deny)
}

// installSeccomp sets no_new_privs and installs seccompProgram on every
// thread of the process (SECCOMP_FILTER_FLAG_TSYNC): an unprivileged process
// may install a filter only with no_new_privs, and TSYNC makes the runtime's
// existing threads take both.
func installSeccomp() error {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	raw, err := bpf.Assemble(seccompProgram(arch))
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	// no_new_privs is per thread until TSYNC spreads it: both calls on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	switch {
	case errno != 0:
		return errno
	case r != 0:
		// TSYNC names the thread it could not synchronise.
		return fmt.Errorf("thread %d could not take the filter", r)
	}
	return nil
}

// namespaces are the network namespaces ProbeSandbox tries, best first.
var namespaces = []Namespace{NamespaceNetwork, NamespaceUserNetwork}

// setNamespace puts the child in an empty network namespace: on its own
// (CLONE_NEWNET needs CAP_SYS_ADMIN) or inside a new user namespace that maps
// only the server's own user and group.
func setNamespace(attr *syscall.SysProcAttr, ns Namespace) {
	switch ns {
	case NamespaceNetwork:
		attr.Cloneflags |= syscall.CLONE_NEWNET
	case NamespaceUserNetwork:
		attr.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
}
