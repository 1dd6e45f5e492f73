package chain

import (
	"math/big"
	"syscall"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"
)

// The chain's part of an automine write and of the reads around it, on the
// OP-stack dev genesis, in CPU time per operation (the process's, the GC's
// included: steadier than wall time on a shared machine):
//
//	go test -run XXX -bench 'SealBlock|ReadAfterSeals' -benchmem ./chain/

var (
	benchSender  = common.Address{0x51}
	benchCounter = common.Address{0xc0}
)

// automineBlock changes what one counter increment and its block's system
// calls change: the sender's nonce and balance, the fee vaults and
// L1Block, the counter's slot (the counter gets code in block 1, so that
// EIP-161 keeps it), the EIP-4788 and EIP-2935 ring slots.
func automineBlock(statedb *state.StateDB, n uint64) {
	statedb.SetNonce(benchSender, n, tracing.NonceChangeUnspecified)
	statedb.AddBalance(benchSender, uint256.NewInt(1), tracing.BalanceChangeUnspecified)
	for _, a := range []common.Address{params.OptimismBaseFeeRecipient, params.OptimismL1FeeRecipient, params.OptimismOperatorFeeRecipient, types.L1BlockAddr} {
		statedb.AddBalance(a, uint256.NewInt(1), tracing.BalanceChangeUnspecified)
	}
	if n == 1 {
		statedb.SetCode(benchCounter, []byte{0}, tracing.CodeChangeUnspecified)
	}
	statedb.SetState(benchCounter, common.Hash{}, common.BigToHash(new(big.Int).SetUint64(n)))
	ring := common.BigToHash(new(big.Int).SetUint64(n % 8191))
	statedb.SetState(params.BeaconRootsAddress, ring, common.BigToHash(new(big.Int).SetUint64(n)))
	statedb.SetState(params.HistoryStorageAddress, ring, common.BigToHash(new(big.Int).SetUint64(n-1)))
}

// sealAutomine seals and flushes the head's next automine block.
func sealAutomine(b *testing.B, c *Chain) {
	_, root := sealWith(b, c, &types.Body{Withdrawals: []*types.Withdrawal{}}, automineBlock)
	if err := c.Flush(root); err != nil {
		b.Fatal(err)
	}
}

func openBench(b *testing.B, dir string) *Chain {
	g, err := DevL2Genesis()
	if err != nil {
		b.Fatal(err)
	}
	c, err := Open(Config{Dir: dir, Genesis: g})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkSealBlock: one block per transaction, sealed (InsertSealed) and
// settled (Flush) as the sequencer does under automine, the next block's
// state opened at the new head.
func BenchmarkSealBlock(b *testing.B) {
	for _, bc := range []struct {
		name string
		dir  func() string
	}{{"memory", func() string { return "" }}, {"disk", b.TempDir}} {
		b.Run(bc.name, func(b *testing.B) {
			c := openBench(b, bc.dir())
			runCPU(b, func() { sealAutomine(b, c) })
		})
	}
}

// BenchmarkReadAfterSeals reads what an eth_call of the counter reads (its
// account, code and slot, the sender's account) and a few accounts more at
// the head of a chain of 200 automine blocks.
func BenchmarkReadAfterSeals(b *testing.B) {
	c := openBench(b, "")
	for range 200 {
		sealAutomine(b, c)
	}
	runCPU(b, func() {
		statedb, err := c.StateAt(c.Head())
		if err != nil {
			b.Fatal(err)
		}
		if statedb.GetNonce(benchSender) != 200 || statedb.GetState(benchCounter, common.Hash{}) != common.BigToHash(big.NewInt(200)) {
			b.Fatal("wrong state")
		}
		statedb.GetCode(benchCounter)
		statedb.GetBalance(params.OptimismBaseFeeRecipient)
		statedb.GetCode(types.L1BlockAddr)
		statedb.GetState(types.L1BlockAddr, common.Hash{})
	})
}

// runCPU runs op b.N times and reports the process's CPU time per op.
func runCPU(b *testing.B, op func()) {
	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.ResetTimer()
	for range b.N {
		op()
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the process's user and system CPU time so far, in ns.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
