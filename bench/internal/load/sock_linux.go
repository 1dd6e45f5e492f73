//go:build linux

package load

import (
	"io"
	"net"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sockReader reads a client connection with recvmsg and keeps the kernel's
// receive time of the first bytes read since mark (SO_TIMESTAMPNS, the
// realtime clock time.Now also reads). On loopback that is when the node's
// write put its answer into this socket, so answer time − send time is the
// node's part of a request's latency, without the time this process took to
// get around to reading it.
type sockReader struct {
	rc    syscall.RawConn
	oob   [64]byte
	stamp int64 // unix ns; 0: none since mark
}

// newSockReader returns nil if conn has no socket or refuses timestamps.
func newSockReader(conn net.Conn) *sockReader {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return nil
	}
	return &sockReader{rc: rc}
}

// mark forgets the last receive time: the next read's is the answer's.
func (s *sockReader) mark() { s.stamp = 0 }

func (s *sockReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n, oobn int
	var rerr error
	err := s.rc.Read(func(fd uintptr) bool {
		for {
			n, oobn, _, _, rerr = unix.Recvmsg(int(fd), p, s.oob[:], 0)
			if rerr != unix.EINTR {
				return rerr != unix.EAGAIN
			}
		}
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	if s.stamp == 0 && oobn >= unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))) {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&s.oob[0]))
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SO_TIMESTAMPNS {
			s.stamp = (*unix.Timespec)(unsafe.Pointer(&s.oob[unix.CmsgLen(0)])).Nano()
		}
	}
	return n, nil
}

// waitStamping returns once the kernel stamps received packets, or false
// after timeout. The first socket that asks for receive times makes Linux
// turn stamping on for the whole system, but in a work item run later
// (net_enable_timestamp defers the static key's change); until then packets
// arrive unstamped. Measured: run alone, 2 of 750 runs of
// TestRunLoadSockLatency lost the stamps of the first one to three answers
// on each sampled connection, and with them the in-socket figures. A run
// calls this after dialling, while its own sampled connections keep
// stamping wanted, so no answer it counts predates it.
func waitStamping(timeout time.Duration) bool {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return false
	}
	defer ln.Close()
	cli, err := net.DialTimeout("tcp", ln.Addr().String(), timeout)
	if err != nil {
		return false
	}
	defer cli.Close()
	srv, err := ln.Accept()
	if err != nil {
		return false
	}
	defer srv.Close()
	s := newSockReader(cli)
	if s == nil {
		return false
	}
	end := time.Now().Add(timeout)
	cli.SetReadDeadline(end)
	buf := make([]byte, 1)
	for time.Now().Before(end) {
		s.mark()
		if _, err := srv.Write(buf); err != nil {
			return false
		}
		if _, err := s.Read(buf); err != nil {
			return false
		}
		if s.stamp != 0 {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}
