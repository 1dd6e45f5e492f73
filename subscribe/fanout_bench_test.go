package subscribe

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/rpc"
)

// BenchmarkFlashblockFanout is the service's cost for one flashblock of 100
// new transfers (20 with a log) with subs clients each subscribed to
// newFlashblocks, newFlashblockTransactions (full) and pendingLogs: encoding
// once and queueing per client. Clients drain their sockets meanwhile, on
// the same cores: their reading and the server's writers count in the time
// (and allocations) too.
func BenchmarkFlashblockFanout(b *testing.B) {
	for _, subs := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("clients=%d", subs), func(b *testing.B) {
			e := newEnv(b, rpc.WSOptions{StreamOptions: rpc.StreamOptions{QueueLen: 1 << 16, QueueBytes: 1 << 30}})
			for range subs {
				c := e.dial(b)
				c.subscribe(`["newFlashblocks"]`)
				c.subscribe(`["newFlashblockTransactions", true]`)
				c.subscribe(`["pendingLogs"]`)
				go func() {
					for {
						_, r, err := c.c.Reader(context.Background())
						if err != nil {
							return
						}
						io.Copy(io.Discard, r)
					}
				}()
			}
			var txs types.Transactions
			logs := map[int]common.Hash{}
			for i := range 100 {
				txs = append(txs, e.transfer(b, i%10, uint64(i/10)))
				if i%5 == 0 {
					logs[i] = topicA
				}
			}
			snap := e.snapshot(1, txs, len(txs), logs)
			snap.Seal()
			b.ReportAllocs()
			for b.Loop() {
				e.svc.onSnapshot(snap)
			}
		})
	}
}
