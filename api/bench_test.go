package api

import (
	"context"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/txpool"
)

// Micro-benchmarks of the state-read hot path (allocations reported): the
// state reader itself, resolving a block selector to a reader, and the
// eth_getBalance / eth_getStorageAt / eth_blockNumber handlers at latest and
// at pending (with and without a published snapshot).
//
//	go test -run '^$' -bench . -benchmem ./api/

var benchContract = common.HexToAddress("0x00000000000000000000000000000000000b3c11")

// benchAPI is a dev chain whose genesis also holds a contract with 16 slots.
func benchAPI(b testing.TB) (*API, *pending.Source, *chain.Chain) {
	b.Helper()
	g := chain.DevGenesis()
	storage := map[common.Hash]common.Hash{}
	for i := int64(0); i < 16; i++ {
		storage[common.BigToHash(big.NewInt(i))] = common.BigToHash(big.NewInt(1000 + i))
	}
	g.Alloc[benchContract] = types.Account{Code: []byte{0x00}, Storage: storage, Balance: new(big.Int), Nonce: 1}
	c, err := chain.Open(chain.Config{Genesis: g})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	src := new(pending.Source)
	return mustNew(b, localChain{c}, Config{Pending: src}), src, c
}

// publishOverHead publishes an empty pending snapshot over the head whose
// state reader is the head's.
func publishOverHead(b *testing.B, src *pending.Source, c *chain.Chain) {
	b.Helper()
	head := c.Head()
	r, err := c.StateReader(head.Root)
	if err != nil {
		b.Fatal(err)
	}
	header := &types.Header{ParentHash: head.Hash(), Number: new(big.Int).Add(head.Number, common.Big1),
		GasLimit: head.GasLimit, Time: head.Time + 1, Difficulty: new(big.Int), BaseFee: big.NewInt(7)}
	src.Publish(&pending.Snapshot{Parent: head, Header: header, State: pending.NewState(r).With(pending.NewDiff())})
}

func rawParams(params ...string) rpc.Params {
	p := make(rpc.Params, len(params))
	for i, s := range params {
		p[i] = json.RawMessage(s)
	}
	return p
}

func BenchmarkStateRead(b *testing.B) {
	a, _, c := benchAPI(b)
	addr := chain.DevAccounts()[0]
	r, err := a.readers.get(c, c.Head().Root)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("account", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if acct, err := r.Account(addr); err != nil || acct == nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("storage", func(b *testing.B) {
		slot := common.BigToHash(big.NewInt(3))
		b.ReportAllocs()
		for b.Loop() {
			if v, err := r.Storage(benchContract, slot); err != nil || v == (common.Hash{}) {
				b.Fatal(err)
			}
		}
	})
	b.Run("open-reader", func(b *testing.B) { // what every read paid before readerCache
		root := c.Head().Root
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.StateReader(root); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkStateAt(b *testing.B) {
	a, src, c := benchAPI(b)
	b.Run("latest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, _, err := a.stateAt(ethjson.Latest); err != nil {
				b.Fatal(err)
			}
		}
	})
	publishOverHead(b, src, c)
	b.Run("pending-snapshot", func(b *testing.B) {
		ref := ethjson.BlockRef{Tag: ethjson.TagPending}
		b.ReportAllocs()
		for b.Loop() {
			if _, _, snap, err := a.stateAt(ref); err != nil || snap == nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkReadHandlers(b *testing.B) {
	a, src, c := benchAPI(b)
	addr := `"` + chain.DevAccounts()[0].Hex() + `"`
	contract := `"` + benchContract.Hex() + `"`
	ctx := context.Background()
	cases := []struct {
		name   string
		h      rpc.Handler
		params rpc.Params
	}{
		{"getBalance/latest", a.getBalance, rawParams(addr, `"latest"`)},
		{"getBalance/pending", a.getBalance, rawParams(addr, `"pending"`)},
		{"getStorageAt/pending", a.getStorageAt, rawParams(contract, `"0x3"`, `"pending"`)},
		{"getTransactionCount/pending", a.getTransactionCount, rawParams(addr, `"pending"`)},
		{"blockNumber", a.blockNumber, nil},
	}
	run := func(b *testing.B, suffix string) {
		for _, bc := range cases {
			b.Run(bc.name+suffix, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := bc.h(ctx, bc.params); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	run(b, "")
	publishOverHead(b, src, c)
	run(b, "/with-snapshot")
	// With the sequencer's pool answering pool nonces (one pooled
	// transaction of the sender read), as a dev node serves them.
	a.poolNonces = benchPool(b, c)
	run(b, "/with-snapshot-and-pool")
}

// benchPool is a transaction pool over the chain's head holding one
// transaction of the first dev account.
func benchPool(b *testing.B, c *chain.Chain) *txpool.Pool {
	b.Helper()
	pool := txpool.New(txpool.DefaultConfig, c.Config(), func() (*types.Header, state.Reader, error) {
		head := c.Head()
		r, err := c.StateReader(head.Root)
		return head, r, err
	})
	key, err := crypto.HexToECDSA(chain.DevKeys[0])
	if err != nil {
		b.Fatal(err)
	}
	to := common.HexToAddress("0xdead")
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(c.Config().ChainID), &types.DynamicFeeTx{
		ChainID: c.Config().ChainID, Gas: 21000, GasFeeCap: big.NewInt(1e11), GasTipCap: big.NewInt(1), To: &to,
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Add(tx); err != nil {
		b.Fatal(err)
	}
	return pool
}
