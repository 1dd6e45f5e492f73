package api

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
)

// What an upstream pays per value a follower fetches (bench follow-defi:
// batches of eth_getProof of up to 16 keys of one contract each, or the
// same values as plain reads): a contract with 1,024 slots in a chain with
// a datadir, as the sequencer runs, at latest. Per op: one eth_getProof of
// N keys, or N eth_getStorageAt and an account's three plain reads.
//
//	go test -run '^$' -bench Proof -benchmem ./api/
func BenchmarkProofAgainstReads(b *testing.B) {
	g := chain.DevGenesis()
	storage := map[common.Hash]common.Hash{}
	for i := int64(0); i < 1024; i++ {
		storage[common.BigToHash(big.NewInt(i))] = common.BigToHash(big.NewInt(1000 + i))
	}
	g.Alloc[benchContract] = types.Account{Code: []byte{0x00}, Storage: storage, Balance: new(big.Int), Nonce: 1}
	for i := int64(0); i < 4096; i++ { // an account trie a few levels deep
		g.Alloc[common.BigToAddress(big.NewInt(0x10000+i))] = types.Account{Balance: big.NewInt(1)}
	}
	c, err := chain.Open(chain.Config{Dir: b.TempDir(), Genesis: g})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	a := mustNew(b, localChain{c}, Config{Pending: new(pending.Source)})
	contract := `"` + benchContract.Hex() + `"`
	ctx := context.Background()
	for _, n := range []int{0, 1, 16} {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf(`"%s"`, common.BigToHash(big.NewInt(int64(i*61%1024))).Hex())
		}
		b.Run(fmt.Sprintf("getProof/keys=%d", n), func(b *testing.B) {
			p := rawParams(contract, "["+strings.Join(keys, ",")+"]", `"latest"`)
			b.ReportAllocs()
			for b.Loop() {
				res, err := a.getProof(ctx, p)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(res); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("plain/keys=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, k := range keys {
					res, err := a.getStorageAt(ctx, rawParams(contract, k, `"latest"`))
					if err != nil {
						b.Fatal(err)
					}
					if _, err := json.Marshal(res); err != nil {
						b.Fatal(err)
					}
				}
				for _, h := range []func(context.Context, rpc.Params) (any, error){a.getBalance, a.getTransactionCount, a.getCode} {
					res, err := h(ctx, rawParams(contract, `"latest"`))
					if err != nil {
						b.Fatal(err)
					}
					if _, err := json.Marshal(res); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
