package follower

import (
	"syscall"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/flashblock"
)

// BenchmarkReexecution: the follower's re-execution of a flashblock of 100
// transfers on its upstream's sealed state (cached after the first op): the
// block opened from index 0's environment, the transactions decoded,
// recovered, executed and the snapshot assembled. One op is one block.
func BenchmarkReexecution(b *testing.B) {
	e, _, parent := execFixture(&testing.T{})
	const perBlock = 100
	raws := make([]hexutil.Bytes, perBlock)
	for i := range raws {
		raws[i] = devTx(&testing.T{}, uint64(i), common.Address{0x10, byte(i)}, 1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	reexecute(b, e, parent, raws)
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// reexecute is BenchmarkReexecution's timed part (a function of its own: an
// instruction count can be taken of it alone).
func reexecute(b *testing.B, e *executor, parent *types.Header, raws []hexutil.Bytes) {
	for i := range b.N {
		id := flashblock.PayloadID{byte(i), byte(i >> 8), byte(i >> 16)}
		fb := &flashblock.Message{PayloadID: id, Index: 0, Base: base(parent), Diff: flashblock.Diff{Transactions: raws}}
		blk, err := e.open(parent, fb)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.apply(blk, fb); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the process's user and system CPU time so far, in ns: what the
// timed part costs on a shared machine, where wall time also counts the
// other processes' turns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
