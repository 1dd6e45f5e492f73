// Package seqapi serves the sequencer's JSON-RPC methods: transaction
// intake (eth_sendRawTransaction, its EIP-7966 Sync form, eth_sendTransaction
// with anvil --optimism's deposits), the dev accounts (eth_accounts,
// eth_sign, personal_sign, eth_signTransaction), eth_fillTransaction,
// txpool_* and testing_buildBlockV1. Each method decodes its parameters,
// calls the sequencer's Go API and codes its errors (errors.go); the anvil
// package serves the dev methods the same way.
package seqapi

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/sequencer"
	"github.com/preconf/preconf/simulate"
)

// API serves transaction intake, dev-account signing and txpool_* methods.
type API struct {
	s        *sequencer.Sequencer
	receipts ReceiptReader
	gas      GasEstimator
	keys     map[common.Address]*ecdsa.PrivateKey
	list     []common.Address
}

// ReceiptReader answers eth_getTransactionReceipt in Go (*api.API does):
// the receipt object as that method writes it, nil when there is none yet.
type ReceiptReader interface {
	TransactionReceipt(hash common.Hash) (json.RawMessage, error)
}

// GasEstimator answers eth_estimateGas in Go (*api.API does), with that
// method's coded errors.
type GasEstimator interface {
	EstimateGas(ctx context.Context, args simulate.CallArgs, ref ethjson.BlockRef) (uint64, error)
}

// Register adds the sequencer's methods to srv. Receipts (of
// eth_sendRawTransactionSync) come from receipts and gas estimates (of
// eth_sendTransaction without "gas") from gas, so that they are the same as
// eth_getTransactionReceipt's and eth_estimateGas's. Without gas only a plain
// transfer to an account without code is estimated (21000).
func Register(srv *rpc.Server, s *sequencer.Sequencer, receipts ReceiptReader, gas GasEstimator) {
	a := &API{s: s, receipts: receipts, gas: gas, keys: make(map[common.Address]*ecdsa.PrivateKey)}
	for _, k := range chain.DevKeys {
		key, err := crypto.HexToECDSA(k)
		if err != nil {
			continue
		}
		addr := crypto.PubkeyToAddress(key.PublicKey)
		a.keys[addr] = key
		a.list = append(a.list, addr)
	}
	for name, h := range map[string]rpc.Handler{
		"eth_sendRawTransaction":     a.sendRawTransaction,
		"eth_sendRawTransactionSync": a.sendRawTransactionSync,
		"eth_sendTransaction":        a.sendTransaction,
		"eth_signTransaction":        a.txResultHandler(a.buildTx),
		"eth_fillTransaction":        a.txResultHandler(a.fillTx),
		"eth_accounts":               a.accounts,
		"eth_sign":                   a.signHandler(0, 1, 2),
		"personal_sign":              a.signHandler(1, 0, 3), // (data, address, password)
		"txpool_status":              a.txpoolStatus,
		"txpool_content":             a.txpoolContent,
		"txpool_contentFrom":         a.txpoolContentFrom,
		"txpool_inspect":             a.txpoolInspect,
		"testing_buildBlockV1":       a.buildBlockV1,
	} {
		srv.Register(name, h)
	}
}

// RegisterDisabled registers intake methods that explain there is no
// sequencer, and an empty pool.
func RegisterDisabled(srv *rpc.Server) {
	refuse := func(context.Context, rpc.Params) (any, error) { return nil, ErrNoSequencer }
	for _, m := range []string{"eth_sendRawTransaction", "eth_sendRawTransactionSync", "eth_sendTransaction", "eth_signTransaction", "eth_sign", "personal_sign"} {
		srv.Register(m, refuse)
	}
	srv.Register("eth_accounts", func(context.Context, rpc.Params) (any, error) { return []common.Address{}, nil })
	srv.Register("txpool_status", func(context.Context, rpc.Params) (any, error) {
		return map[string]hexutil.Uint{"pending": 0, "queued": 0}, nil
	})
	empty := func(context.Context, rpc.Params) (any, error) {
		return map[string]map[string]any{"pending": {}, "queued": {}}, nil
	}
	srv.Register("txpool_content", empty)
	srv.Register("txpool_inspect", empty)
	srv.Register("txpool_contentFrom", func(context.Context, rpc.Params) (any, error) {
		return map[string]map[string]any{"pending": {}, "queued": {}}, nil
	})
}
