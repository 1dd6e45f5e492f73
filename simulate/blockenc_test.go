package simulate

import (
	"bytes"
	"errors"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
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
	}{
		{"empty, pre-Shanghai", nil, false, nil},
		{"empty", nil, true, nil},
		{"one transfer", []*types.Transaction{dynamic(0)}, true, nil},
		{"every type but blobs", []*types.Transaction{legacy, dynamic(0), dynamic(100), accessList, setCode}, true, nil},
		{"long list", many, true, nil},
		{"legacy, pre-Shanghai", []*types.Transaction{legacy, legacy}, false, nil},
		{"blob: sized by the block", []*types.Transaction{blob}, true, nil},
		{"withdrawals: sized by the block", nil, true, []*types.Withdrawal{{Index: 1, Amount: 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &types.Body{Transactions: tc.txs}
			if tc.shanghai {
				body.Withdrawals = append(types.Withdrawals{}, tc.withdrawals...)
			}
			block := types.NewBlock(header(tc.shanghai), body, nil, trie.NewStackTrie(nil), params.TestChainConfig)
			payload, sized := txsPayload(block.Transactions())
			hash, size := hashAndSize(block.Header(), block.Withdrawals(), payload, sized, block.Transactions)
			if hash != block.Hash() {
				t.Errorf("hash %x, block's %x", hash, block.Hash())
			}
			if size != block.Size() {
				t.Errorf("size %d, block's %d", size, block.Size())
			}
		})
	}
}

// zeroRootBlock sets the header types.NewBlock would build: same hash, same
// withdrawals, on an Ethereum and an OP-stack (Isthmus) configuration.
func TestZeroRootBlockMatchesNewBlock(t *testing.T) {
	to := common.HexToAddress("0xc2")
	// a transfer with nonce and n logs
	type sent struct{ nonce, logs int }
	encode := func(list []sent) (*blockEncoder, types.Transactions, types.Receipts) {
		enc := blockEncoders.Get().(*blockEncoder)
		enc.reset()
		var txs types.Transactions
		var receipts types.Receipts
		for k, c := range list {
			nonce, gas := hexutil.Uint64(c.nonce), hexutil.Uint64(50000)
			call := &CallArgs{ChainID: (*hexutil.Big)(big.NewInt(1337)), Nonce: &nonce, To: &to, Gas: &gas}
			if _, typ, err := enc.addTx(call); err != nil || typ != types.DynamicFeeTxType {
				t.Fatalf("addTx: type %d, %v", typ, err)
			}
			r := &types.Receipt{Type: types.DynamicFeeTxType, Status: types.ReceiptStatusSuccessful, CumulativeGasUsed: 21000 * uint64(k+1)}
			for i := 0; i < c.logs; i++ {
				r.Logs = append(r.Logs, &types.Log{Address: to, Topics: []common.Hash{{byte(i + 1)}}, Data: []byte{byte(i)}})
			}
			r.Bloom = types.CreateBloom(r)
			enc.addReceipt(types.DynamicFeeTxType, call, nil, false, r.CumulativeGasUsed, r.Logs)
			txs, receipts = append(txs, call.transaction(types.DynamicFeeTxType)), append(receipts, r)
		}
		return enc, txs, receipts
	}
	zero := uint64(0)
	op := *params.TestChainConfig
	op.Optimism = &params.OptimismConfig{EIP1559Elasticity: 6, EIP1559Denominator: 50}
	op.BedrockBlock, op.RegolithTime, op.CanyonTime, op.EcotoneTime = big.NewInt(0), &zero, &zero, &zero
	op.FjordTime, op.GraniteTime, op.HoloceneTime, op.IsthmusTime = &zero, &zero, &zero, &zero
	passerRoot := common.Hash{0x77}
	header := func(cfg *params.ChainConfig) *types.Header {
		excess, used := uint64(0), uint64(0)
		h := &types.Header{Number: big.NewInt(5), Time: 100, GasLimit: 30_000_000, Difficulty: new(big.Int), BaseFee: big.NewInt(7),
			ExcessBlobGas: &excess, BlobGasUsed: &used, ParentBeaconRoot: &common.Hash{9}, RequestsHash: &types.EmptyRequestsHash}
		if cfg.Optimism != nil {
			h.WithdrawalsHash = &passerRoot
		}
		return h
	}
	for _, tc := range []struct {
		name        string
		cfg         *params.ChainConfig
		sent        []sent
		withdrawals types.Withdrawals
	}{
		{"empty", params.TestChainConfig, nil, types.Withdrawals{}},
		{"pre-Shanghai body", params.TestChainConfig, []sent{{0, 0}}, nil},
		{"two with logs", params.TestChainConfig, []sent{{0, 2}, {1, 1}}, types.Withdrawals{}},
		{"withdrawals", params.TestChainConfig, []sent{{0, 0}}, types.Withdrawals{{Index: 1, Amount: 2}}},
		{"isthmus", &op, []sent{{0, 1}}, types.Withdrawals{}},
		{"isthmus, empty", &op, nil, types.Withdrawals{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc, txs, receipts := encode(tc.sent)
			want := types.NewBlock(header(tc.cfg), &types.Body{Transactions: txs, Withdrawals: tc.withdrawals}, receipts, trie.NewStackTrie(nil), tc.cfg)
			h := header(tc.cfg)
			ws, err := zeroRootBlock(h, enc, tc.withdrawals, tc.cfg, listHashers.Get().(*listHasher))
			if err != nil {
				t.Fatal(err)
			}
			if h.Hash() != want.Hash() {
				t.Errorf("header %+v\nwant %+v", h, want.Header())
			}
			if (ws == nil) != (want.Withdrawals() == nil) || len(ws) != len(want.Withdrawals()) {
				t.Errorf("withdrawals %v, block's %v", ws, want.Withdrawals())
			}
		})
	}
	t.Run("isthmus with withdrawals", func(t *testing.T) {
		enc, _, _ := encode(nil)
		_, err := zeroRootBlock(header(&op), enc, types.Withdrawals{{Index: 1}}, &op, listHashers.Get().(*listHasher))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidParams {
			t.Errorf("err = %v, want code %d", err, CodeInvalidParams)
		}
	})
}
