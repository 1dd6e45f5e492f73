//go:build !linux

package load

import (
	"net"
	"time"
)

// sockReader is Linux's (sock_linux.go); elsewhere answers carry no
// receive time and the generator reads its connections directly.
type sockReader struct{ stamp int64 }

func newSockReader(net.Conn) *sockReader       { return nil }
func (s *sockReader) mark()                    {}
func (s *sockReader) Read([]byte) (int, error) { return 0, nil }
func waitStamping(time.Duration) bool          { return false }
