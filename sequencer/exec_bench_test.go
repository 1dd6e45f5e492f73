package sequencer

import (
	"math/big"
	"syscall"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
)

// BenchmarkBlockExecution: the sequencer's execution of a block, on its own
// goroutine's path without the loop: opened (on the OP-stack dev chain with
// its L1-attributes deposit), 100 transfers applied, published as one
// flashblock (state root, diff, roots, snapshot), sealed into the in-memory
// chain. One op is one block.
func BenchmarkBlockExecution(b *testing.B) {
	for _, k := range chainKinds {
		b.Run(k.name, func(b *testing.B) {
			h := newHarnessWith(&testing.T{}, "", k.genesis(), Config{Mining: ManualMining})
			s := h.seq
			const perBlock = 100
			signer := types.LatestSigner(h.chain.Config())
			txs := make([]*types.Transaction, 0, b.N*perBlock)
			for i := range b.N * perBlock {
				key := h.keys[i%len(h.keys)]
				to := common.Address{0x10, byte(i), byte(i >> 8), byte(i >> 16)}
				txs = append(txs, types.MustSignNewTx(key, signer, &types.DynamicFeeTx{ChainID: h.chain.Config().ChainID,
					Nonce: uint64(i / len(h.keys)), GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(100 * params.GWei),
					Gas: 21000, To: &to, Value: big.NewInt(1)}))
			}
			first := 0
			if k.genesis() == nil {
				first = 1 // the L1-attributes deposit
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			executeBlocks(b, s, txs, perBlock, first)
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// executeBlocks is BenchmarkBlockExecution's timed part (a function of its
// own: an instruction count can be taken of it alone).
func executeBlocks(b *testing.B, s *Sequencer, txs []*types.Transaction, perBlock, first int) {
	for i := range b.N {
		if err := s.openNext(nil); err != nil {
			b.Fatal(err)
		}
		for _, tx := range txs[i*perBlock : (i+1)*perBlock] {
			if err := s.apply(s.blk, tx); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.publish(s.blk, first, false); err != nil {
			b.Fatal(err)
		}
		if _, err := s.seal(nil); err != nil {
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
