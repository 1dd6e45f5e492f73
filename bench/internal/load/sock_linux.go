//go:build linux

package load

import (
	"io"
	"net"
	"syscall"
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
