package pending

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc/eip1559"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
)

func TestNewHeader(t *testing.T) {
	config := params.MergedTestChainConfig
	parent := &types.Header{
		Number: big.NewInt(9), Time: 100, GasLimit: 30_000_000, GasUsed: 20_000_000,
		BaseFee: big.NewInt(params.InitialBaseFee), Difficulty: new(big.Int),
		ExcessBlobGas: new(uint64), BlobGasUsed: new(uint64),
	}
	env := Env{Coinbase: common.Address{1}, GasLimit: 30_000_000, Time: 102, Extra: []byte{7}, Random: common.Hash{2}, BeaconRoot: common.Hash{3}}
	tests := []struct {
		name    string
		baseFee *big.Int
		want    *big.Int
	}{
		{"computed by EIP-1559", nil, eip1559.CalcBaseFee(config, parent, env.Time)},
		{"announced by the builder", big.NewInt(12345), big.NewInt(12345)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := env
			e.BaseFee = tt.baseFee
			h := NewHeader(config, parent, e)
			if h.Number.Uint64() != 10 || h.ParentHash != parent.Hash() || h.Time != 102 || h.Coinbase != env.Coinbase || h.MixDigest != env.Random {
				t.Fatalf("environment not applied: %+v", h)
			}
			if h.BaseFee.Cmp(tt.want) != 0 {
				t.Fatalf("base fee %s, want %s", h.BaseFee, tt.want)
			}
			if h.ParentBeaconRoot == nil || *h.ParentBeaconRoot != env.BeaconRoot || h.ExcessBlobGas == nil || h.WithdrawalsHash == nil || h.RequestsHash == nil {
				t.Fatal("Shanghai/Cancun/Prague fields missing")
			}
			if h.TxHash != types.EmptyTxsHash || h.ReceiptHash != types.EmptyReceiptsHash || h.UncleHash != types.EmptyUncleHash {
				t.Fatal("an empty block's roots expected")
			}
		})
	}
	e := env
	e.Extra[0] = 7
	h := NewHeader(config, parent, e)
	e.Extra[0] = 8
	if h.Extra[0] != 7 {
		t.Fatal("extra data must be copied")
	}
}
