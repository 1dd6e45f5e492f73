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
	for _, bc := range []struct {
		name string
		dir  func() string
	}{{"memory", func() string { return "" }}, {"disk", b.TempDir}} {
		b.Run(bc.name, func(b *testing.B) { benchAutomine(b, bc.dir()) })
	}
}

func benchAutomine(b *testing.B, dir string) {
	c, err := chain.Open(chain.Config{Dir: dir, Genesis: chain.DevGenesis()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
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
	defer s.Stop()
	key, _ := crypto.HexToECDSA(chain.DevKeys[0])
	signer := types.LatestSignerForChainID(c.Config().ChainID)
	to := common.Address{0xc0}
	txs := make([]*types.Transaction, b.N)
	for i := range txs {
		txs[i] = types.MustSignNewTx(key, signer, &types.DynamicFeeTx{
			ChainID: c.Config().ChainID, Nonce: uint64(i), GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(100 * params.GWei),
			Gas: 21000, To: &to, Value: big.NewInt(1),
		})
	}
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
