package api

import (
	"context"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/simulate"
)

// The EVM-bound eth_calls of `go run ./bench` (eth_call/… workloads),
// in-process: the same hand-assembled contracts in the genesis
// (bench/internal/harness/evm.go has them annotated), called at pending.
var (
	// keccakLoop hashes a word 100,000 times (74 gas a round, 7.4M gas).
	keccakLoop     = common.HexToAddress("0x00000000000000000000000000000000000e7001")
	keccakLoopCode = common.FromHex("0x620186a05b60206000206000526001900380600457602060" + "00f3")
	// freshStores writes 500 slots that hold nothing (22,100 gas each).
	freshStores     = common.HexToAddress("0x00000000000000000000000000000000000e7002")
	freshStoresCode = common.FromHex("0x6101f45b80805560019003806003570000")
	// warmLoads reads its 16 filled slots 20,000 times (137 gas a round).
	warmLoads     = common.HexToAddress("0x00000000000000000000000000000000000e7003")
	warmLoadsCode = common.FromHex("0x614e205b600f81165450600190038060035700")
)

func evmAlloc() types.GenesisAlloc {
	slots := map[common.Hash]common.Hash{}
	for i := int64(0); i < 16; i++ {
		slots[common.BigToHash(big.NewInt(i))] = common.BigToHash(big.NewInt(i + 1))
	}
	return types.GenesisAlloc{
		keccakLoop:  {Code: keccakLoopCode, Balance: new(big.Int)},
		freshStores: {Code: freshStoresCode, Balance: new(big.Int)},
		warmLoads:   {Code: warmLoadsCode, Balance: new(big.Int), Storage: slots},
	}
}

func benchmarkEVMCall(b *testing.B, to common.Address, ref string) {
	e := newPendingEnvWith(b, simulate.RootZero, evmAlloc())
	p := rpc.Params{json.RawMessage(`{"to":"` + to.Hex() + `","gas":"0x1c9c380"}`), json.RawMessage(ref)}
	ctx := context.Background()
	out, err := e.api.ethCall(ctx, p)
	if err != nil {
		b.Fatal(err)
	}
	if to == keccakLoop && len(out.(hexutil.Bytes)) != 32 {
		b.Fatalf("keccak loop returned %v", out)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.api.ethCall(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCallKeccakLoop(b *testing.B)  { benchmarkEVMCall(b, keccakLoop, `"pending"`) }
func BenchmarkCallFreshStores(b *testing.B) { benchmarkEVMCall(b, freshStores, `"pending"`) }
func BenchmarkCallWarmLoads(b *testing.B)   { benchmarkEVMCall(b, warmLoads, `"pending"`) }
