package simulate

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"
)

func TestHashAndSizeMatchBlock(t *testing.T) {
	to := common.HexToAddress("0xc2")
	legacy := types.NewTx(&types.LegacyTx{Nonce: 1, To: &to, Gas: 21000, GasPrice: big.NewInt(1), Value: big.NewInt(1000)})
	dynamic := func(data int) *types.Transaction {
		return types.NewTx(&types.DynamicFeeTx{ChainID: big.NewInt(1337), Nonce: 2, To: &to, Gas: 50000,
			GasFeeCap: big.NewInt(0), GasTipCap: big.NewInt(0), Data: bytes.Repeat([]byte{0xab}, data)})
	}
	accessList := types.NewTx(&types.AccessListTx{ChainID: big.NewInt(1337), To: &to, Gas: 30000, GasPrice: big.NewInt(0),
		AccessList: types.AccessList{{Address: to, StorageKeys: []common.Hash{{1}, {2}}}}})
	setCode := types.NewTx(&types.SetCodeTx{ChainID: uint256.NewInt(1337), To: to, Gas: 60000, GasFeeCap: uint256.NewInt(0), GasTipCap: uint256.NewInt(0),
		AuthList: []types.SetCodeAuthorization{{ChainID: *uint256.NewInt(1337), Address: to, Nonce: 3}}})
	blob := types.NewTx(&types.BlobTx{ChainID: uint256.NewInt(1337), To: to, Gas: 21000, BlobFeeCap: uint256.NewInt(1),
		GasFeeCap: uint256.NewInt(0), GasTipCap: uint256.NewInt(0), BlobHashes: []common.Hash{{0x01}}})
	many := make([]*types.Transaction, 40)
	for i := range many {
		many[i] = dynamic(i * 7)
	}
	header := func(shanghai bool) *types.Header {
		h := &types.Header{Number: big.NewInt(5), Time: 100, GasLimit: 30_000_000, Difficulty: new(big.Int),
			BaseFee: big.NewInt(7), Extra: []byte("preconf"), UncleHash: types.EmptyUncleHash}
		if shanghai {
			h.WithdrawalsHash = &types.EmptyWithdrawalsHash
			excess, used := uint64(0), uint64(0)
			h.ExcessBlobGas, h.BlobGasUsed, h.ParentBeaconRoot = &excess, &used, &common.Hash{9}
			h.RequestsHash = &types.EmptyRequestsHash
		}
		return h
	}
	for _, tc := range []struct {
		name        string
		txs         []*types.Transaction
		shanghai    bool
		withdrawals []*types.Withdrawal
		sized       bool
	}{
		{"empty, pre-Shanghai", nil, false, nil, true},
		{"empty", nil, true, nil, true},
		{"one transfer", []*types.Transaction{dynamic(0)}, true, nil, true},
		{"every type but blobs", []*types.Transaction{legacy, dynamic(0), dynamic(100), accessList, setCode}, true, nil, true},
		{"long list", many, true, nil, true},
		{"legacy, pre-Shanghai", []*types.Transaction{legacy, legacy}, false, nil, true},
		{"blob: asks the block", []*types.Transaction{blob}, true, nil, false},
		{"withdrawals: ask the block", nil, true, []*types.Withdrawal{{Index: 1, Amount: 2}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &types.Body{Transactions: tc.txs}
			if tc.shanghai {
				body.Withdrawals = append(types.Withdrawals{}, tc.withdrawals...)
			}
			block := types.NewBlock(header(tc.shanghai), body, nil, trie.NewStackTrie(nil), params.TestChainConfig)
			hash, size := hashAndSize(block.Header(), block)
			if hash != block.Hash() {
				t.Errorf("hash %x, block's %x", hash, block.Hash())
			}
			if !tc.sized {
				if size != 0 {
					t.Errorf("size %d, want 0 (not derived)", size)
				}
				return
			}
			if size != block.Size() {
				t.Errorf("size %d, block's %d", size, block.Size())
			}
		})
	}
}
