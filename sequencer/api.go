package sequencer

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/simulate"
)

// API serves transaction intake, dev-account signing and txpool_* methods.
type API struct {
	s        *Sequencer
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
func (s *Sequencer) Register(srv *rpc.Server, receipts ReceiptReader, gas GasEstimator) {
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
		"evm_mine":                   a.evmMine,
		"anvil_mine":                 a.anvilMine,
		"hardhat_mine":               a.anvilMine,
		"testing_buildBlockV1":       a.buildBlockV1,
	} {
		srv.Register(name, h)
	}
}

// ErrNoSequencer answers transaction intake on a node without a sequencer.
var ErrNoSequencer = &rpc.ServerError{Msg: "this node does not sequence (started with --no-sequencer): transactions are not accepted"}

// RegisterDisabled registers intake methods that explain there is no
// sequencer, and an empty pool.
func RegisterDisabled(srv *rpc.Server) {
	refuse := func(context.Context, rpc.Params) (any, error) { return nil, ErrNoSequencer }
	for _, m := range []string{"eth_sendRawTransaction", "eth_sendRawTransactionSync", "eth_sendTransaction", "eth_signTransaction", "eth_sign", "personal_sign", "evm_mine", "anvil_mine", "hardhat_mine"} {
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

// poolError turns a pool rejection into go-ethereum's answer: -32000 with
// the pool's message.
func poolError(err error) error {
	var coded rpc.Error
	if errors.As(err, &coded) {
		return err
	}
	return &rpc.ServerError{Msg: err.Error()}
}

// Coded is the JSON-RPC error the node answers for err, an error of the
// sequencer or of the pool and core beneath it, as go-ethereum's ethapi
// codes core's errors at its edge: errors already coded (eth_estimateGas's,
// through a GasEstimator) keep theirs, a RefusedError is -32602 (invalid
// params) and anything else is otherwise's code with err's message.
func Coded(err error, otherwise int) error {
	if err == nil {
		return nil
	}
	var coded rpc.Error
	if errors.As(err, &coded) {
		return err
	}
	var refused *RefusedError
	if errors.As(err, &refused) {
		return &rpc.InvalidParamsError{Msg: err.Error()}
	}
	return &rpc.CodedError{Code: otherwise, Msg: err.Error()}
}
