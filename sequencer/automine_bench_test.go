package sequencer

import (
	"context"
	"math/big"
	"syscall"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/pending"
)

// BenchmarkAutomineWrite is the node's part of a test suite's write under
// automine (go run ./bench suite): a transfer admitted, then the block
// holding it mined (what eth_sendRawTransaction does before it answers),
// on the plain dev chain the suite runs, with the chain and WAL in a
// datadir and in memory. cpu-ns/op is the process's CPU time per write
// (steadier than wall time on a shared machine); count fsyncs with
//
//	go test -c -o /tmp/seq.test ./sequencer
//	strace -c -f -e trace=fsync,fdatasync /tmp/seq.test -test.run XXX -test.bench 'AutomineWrite/disk' -test.benchtime 200x
func BenchmarkAutomineWrite(b *testing.B) {
	for _, bc := range benchDirs(b) {
		b.Run(bc.name, func(b *testing.B) { benchAutomine(b, bc.dir()) })
	}
}

// BenchmarkSnapshotCycle is the node's part of a test suite's snapshot
// cycle (go run ./bench suite): evm_snapshot, a transfer admitted and
// mined, evm_revert; the same transaction every time, as the revert takes
// its nonce back. cpu-ns/op is the process's CPU time per cycle.
func BenchmarkSnapshotCycle(b *testing.B) {
	for _, bc := range benchDirs(b) {
		b.Run(bc.name, func(b *testing.B) {
			s, c, txs := startAutomine(b, bc.dir(), 1)
			ctx := context.Background()
			b.ReportAllocs()
			cpu0 := processCPU(b)
			b.ResetTimer()
			for range b.N {
				id, err := s.Snapshot(ctx)
				if err != nil {
					b.Fatal(err)
				}
				res, err := s.Admit(txs[0])
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Automine(ctx, res); err != nil {
					b.Fatal(err)
				}
				if ok, err := s.Revert(ctx, id); !ok || err != nil {
					b.Fatalf("revert %d: %v %v", id, ok, err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
			if got := c.Head().Number.Uint64(); got != 0 {
				b.Fatalf("head %d after %d cycles", got, b.N)
			}
		})
	}
}

type benchDir struct {
	name string
	dir  func() string
}

// benchDirs are the chain and WAL in memory and in a datadir.
func benchDirs(b *testing.B) []benchDir {
	return []benchDir{{"memory", func() string { return "" }}, {"disk", b.TempDir}}
}

// startAutomine starts an automine sequencer on the dev chain in dir (""
// in memory) and signs n transfers from the first dev account, nonces
// 0..n-1. Both stop with b.
func startAutomine(b *testing.B, dir string, n int) (*Sequencer, *chain.Chain, []*types.Transaction) {
	c, err := chain.Open(chain.Config{Dir: dir, Genesis: chain.DevGenesis()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	cfg := Config{Mining: AutoMining, Logger: testLogger()}
	if dir != "" {
		cfg.WALPath = dir + "/sequencer/flashblocks.wal"
	}
	s, err := New(cfg, c, new(pending.Source))
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Stop() })
	key, _ := crypto.HexToECDSA(chain.DevKeys[0])
	signer := types.LatestSignerForChainID(c.Config().ChainID)
	to := common.Address{0xc0}
	txs := make([]*types.Transaction, n)
	for i := range txs {
		txs[i] = types.MustSignNewTx(key, signer, &types.DynamicFeeTx{
			ChainID: c.Config().ChainID, Nonce: uint64(i), GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(100 * params.GWei),
			Gas: 21000, To: &to, Value: big.NewInt(1),
		})
	}
	return s, c, txs
}

func benchAutomine(b *testing.B, dir string) {
	s, c, txs := startAutomine(b, dir, b.N)
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.ResetTimer()
	for _, tx := range txs {
		res, err := s.Admit(tx)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Automine(ctx, res); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	if got := c.Head().Number.Uint64(); got != uint64(b.N) {
		b.Fatalf("head %d after %d writes", got, b.N)
	}
}

// processCPU is the process's user and system CPU time so far, in ns.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
