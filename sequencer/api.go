package sequencer

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/txpool"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/simulate"
	ptxpool "github.com/preconf/preconf/txpool"
)

// eth_sendRawTransactionSync timeouts (go-ethereum's defaults).
const (
	DefaultSyncTimeout = 20 * time.Second
	MaxSyncTimeout     = time.Minute
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
		"eth_signTransaction":        a.signTransaction,
		"eth_accounts":               a.accounts,
		"eth_sign":                   a.signHandler(0, 1, 2),
		"personal_sign":              a.signHandler(1, 0, 3), // (data, address, password)
		"txpool_status":              a.txpoolStatus,
		"txpool_content":             a.txpoolContent,
		"txpool_inspect":             a.txpoolInspect,
		"evm_mine":                   a.evmMine,
	} {
		srv.Register(name, h)
	}
}

// ErrNoSequencer answers transaction intake on a node without a sequencer.
var ErrNoSequencer = &rpc.ServerError{Msg: "this node does not sequence (started with --block-time 0): transactions are not accepted"}

// RegisterDisabled registers intake methods that explain there is no
// sequencer, and an empty pool.
func RegisterDisabled(srv *rpc.Server) {
	refuse := func(context.Context, rpc.Params) (any, error) { return nil, ErrNoSequencer }
	for _, m := range []string{"eth_sendRawTransaction", "eth_sendRawTransactionSync", "eth_sendTransaction", "eth_signTransaction", "eth_sign", "personal_sign", "evm_mine"} {
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

func decodeRawTx(p rpc.Params) (*types.Transaction, error) {
	var input hexutil.Bytes
	if err := p.Required(0, &input); err != nil {
		return nil, err
	}
	tx := new(types.Transaction)
	if err := tx.UnmarshalBinary(input); err != nil {
		return nil, &rpc.ServerError{Msg: err.Error()} // go-ethereum: the decoder's error, -32000
	}
	return tx, nil
}

func (a *API) sendRawTransaction(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(1); err != nil {
		return nil, err
	}
	tx, err := decodeRawTx(p)
	if err != nil {
		return nil, err
	}
	if _, err := a.s.Admit(tx); err != nil {
		return nil, poolError(err)
	}
	return tx.Hash(), nil
}

// syncTimeout reads the optional timeout in milliseconds (a number or a hex
// quantity, as viem sends it).
func syncTimeout(p rpc.Params) (time.Duration, error) {
	if !p.Present(1) {
		return DefaultSyncTimeout, nil
	}
	raw := bytes.TrimSpace(p[1])
	var ms uint64
	if len(raw) > 0 && raw[0] == '"' {
		var q hexutil.Uint64
		if err := json.Unmarshal(raw, &q); err != nil {
			return 0, &rpc.InvalidParamsError{Msg: "invalid argument 1: timeout must be milliseconds: " + err.Error()}
		}
		ms = uint64(q)
	} else if err := json.Unmarshal(raw, &ms); err != nil {
		return 0, &rpc.InvalidParamsError{Msg: "invalid argument 1: timeout must be milliseconds"}
	}
	if ms == 0 {
		return DefaultSyncTimeout, nil
	}
	d := time.Duration(ms) * time.Millisecond
	if ms > uint64(MaxSyncTimeout/time.Millisecond) {
		d = MaxSyncTimeout
	}
	return d, nil
}

// sendRawTransactionSync (EIP-7966) answers with the receipt once the
// transaction is pre-confirmed: its flashblock is durable and published.
func (a *API) sendRawTransactionSync(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.Max(2); err != nil {
		return nil, err
	}
	tx, err := decodeRawTx(p)
	if err != nil {
		return nil, err
	}
	timeout, err := syncTimeout(p)
	if err != nil {
		return nil, err
	}
	hash := tx.Hash()
	if r, ok := a.receipt(hash); ok {
		return r, nil // already pre-confirmed or sealed
	}
	done, cancel := a.s.watch(hash)
	defer cancel()
	res, err := a.s.Admit(tx)
	switch {
	case errors.Is(err, txpool.ErrAlreadyKnown):
	case err != nil:
		if r, ok := a.receipt(hash); ok {
			return r, nil // pre-confirmed between the check and the admission
		}
		return nil, poolError(err)
	case res.Queued:
		return nil, &rpc.CodedError{
			Code: rpc.CodeServer,
			Msg:  fmt.Sprintf("nonce too high: tx nonce %d, expected nonce %d (the transaction is queued until the gap is filled)", tx.Nonce(), res.NextNonce),
			Data: hexutil.Uint64(res.NextNonce).String(),
		}
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		if r, ok := a.receipt(hash); ok {
			return r, nil
		}
		return nil, &rpc.CodedError{Code: 4, Msg: fmt.Sprintf("The transaction was added to the transaction pool but wasn't processed in %v", timeout), Data: hash.Hex()}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if r, ok := a.receipt(hash); ok {
		return r, nil
	}
	return nil, &rpc.InternalError{Msg: "pre-confirmed transaction has no receipt"}
}

// receipt is the transaction's receipt as eth_getTransactionReceipt gives it.
func (a *API) receipt(hash common.Hash) (json.RawMessage, bool) {
	if a.receipts == nil {
		return nil, false
	}
	r, err := a.receipts.TransactionReceipt(hash)
	if err != nil || len(r) == 0 {
		return nil, false
	}
	return r, true
}

func (a *API) accounts(context.Context, rpc.Params) (any, error) { return a.list, nil }

// evmMine seals the pending block now (parameters, e.g. a timestamp, are
// ignored); it answers "0x0" as anvil and hardhat do.
func (a *API) evmMine(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.Max(1); err != nil {
		return nil, err
	}
	if err := a.s.Mine(ctx); err != nil {
		return nil, &rpc.ServerError{Msg: err.Error()}
	}
	return "0x0", nil
}

// txArgs are eth_sendTransaction's arguments: the same object as eth_call's.
type txArgs = simulate.CallArgs

// txType reads the optional "type" field.
func txType(args *txArgs) (*uint64, error) {
	if len(args.Type) == 0 || string(args.Type) == "null" {
		return nil, nil
	}
	var t hexutil.Uint64
	if err := json.Unmarshal(args.Type, &t); err != nil {
		return nil, &rpc.InvalidParamsError{Msg: "invalid \"type\": " + err.Error()}
	}
	v := uint64(t)
	return &v, nil
}

// DefaultTip is the priority fee eth_sendTransaction pays when none is given.
var DefaultTip = big.NewInt(params.GWei)

// buildTx fills defaults (nonce, fees, gas) and signs with the dev key.
func (a *API) buildTx(ctx context.Context, args *txArgs) (*types.Transaction, error) {
	if args.From == nil {
		return nil, &rpc.InvalidParamsError{Msg: "missing \"from\""}
	}
	key, ok := a.keys[*args.From]
	if !ok {
		return nil, &rpc.ServerError{Msg: "unknown account"}
	}
	typ, err := txType(args)
	if err != nil {
		return nil, err
	}
	if len(args.BlobHashes) > 0 || (typ != nil && *typ == types.BlobTxType) {
		return nil, &rpc.ServerError{Msg: ptxpool.ErrBlobTx.Error()}
	}
	if args.Data != nil && args.Input != nil && !bytes.Equal(*args.Data, *args.Input) {
		return nil, &rpc.InvalidParamsError{Msg: `both "data" and "input" are set and not equal. Please use "input" to pass transaction call data`}
	}
	var data []byte
	if args.Input != nil {
		data = *args.Input
	} else if args.Data != nil {
		data = *args.Data
	}
	chainID := a.s.config.ChainID
	if args.ChainID != nil && args.ChainID.ToInt().Cmp(chainID) != 0 {
		return nil, &rpc.InvalidParamsError{Msg: fmt.Sprintf("chainId does not match node's (have=%v, want=%v)", args.ChainID.ToInt(), chainID)}
	}
	head, st, err := a.s.poolEnv()
	if err != nil {
		return nil, &rpc.ServerError{Msg: err.Error()}
	}
	if head.BaseFee == nil {
		return nil, &rpc.ServerError{Msg: "pending block has no base fee (pre-London chain)"}
	}
	var nonce uint64
	if args.Nonce != nil {
		nonce = uint64(*args.Nonce)
	} else {
		var stateNonce uint64
		if acct, err := st.Account(*args.From); err == nil && acct != nil {
			stateNonce = acct.Nonce
		}
		nonce = a.s.pool.NextNonce(*args.From, stateNonce)
	}
	value := new(big.Int)
	if args.Value != nil {
		value = args.Value.ToInt()
	}
	var gas uint64
	if args.Gas != nil {
		gas = uint64(*args.Gas)
	} else if gas, err = a.estimate(ctx, args, st, data); err != nil {
		return nil, err
	}
	var al types.AccessList
	if args.AccessList != nil {
		al = *args.AccessList
	}
	legacy := args.GasPrice != nil && args.MaxFeePerGas == nil && args.MaxPriorityFeePerGas == nil
	if typ != nil {
		legacy = *typ == types.LegacyTxType || *typ == types.AccessListTxType
	}
	var inner types.TxData
	if legacy {
		var price *big.Int
		if args.GasPrice != nil {
			price = args.GasPrice.ToInt()
		} else {
			price = new(big.Int).Add(head.BaseFee, DefaultTip)
		}
		if args.AccessList != nil || (typ != nil && *typ == types.AccessListTxType) {
			inner = &types.AccessListTx{ChainID: chainID, Nonce: nonce, GasPrice: price, Gas: gas, To: args.To, Value: value, Data: data, AccessList: al}
		} else {
			inner = &types.LegacyTx{Nonce: nonce, GasPrice: price, Gas: gas, To: args.To, Value: value, Data: data}
		}
	} else {
		tip := DefaultTip
		if args.MaxPriorityFeePerGas != nil {
			tip = args.MaxPriorityFeePerGas.ToInt()
		}
		var feeCap *big.Int
		switch {
		case args.MaxFeePerGas != nil:
			feeCap = args.MaxFeePerGas.ToInt()
		case args.GasPrice != nil:
			feeCap = args.GasPrice.ToInt()
		default:
			feeCap = new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
		}
		if len(args.AuthorizationList) > 0 || (typ != nil && *typ == types.SetCodeTxType) {
			if args.To == nil {
				return nil, &rpc.ServerError{Msg: "EIP-7702 transaction cannot be used to create contract"}
			}
			inner = &types.SetCodeTx{
				ChainID: uint256.MustFromBig(chainID), Nonce: nonce, GasTipCap: uint256.MustFromBig(tip), GasFeeCap: uint256.MustFromBig(feeCap),
				Gas: gas, To: *args.To, Value: uint256.MustFromBig(value), Data: data, AccessList: al, AuthList: args.AuthorizationList,
			}
		} else {
			inner = &types.DynamicFeeTx{ChainID: chainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: gas, To: args.To, Value: value, Data: data, AccessList: al}
		}
	}
	tx, err := types.SignNewTx(key, a.s.signer, inner)
	if err != nil {
		return nil, &rpc.ServerError{Msg: err.Error()}
	}
	return tx, nil
}

// estimate finds a gas limit: eth_estimateGas at "pending" when the node has
// it, otherwise 21000 for a plain transfer to an account without code.
func (a *API) estimate(ctx context.Context, args *txArgs, st interface {
	Account(common.Address) (*types.StateAccount, error)
}, data []byte) (uint64, error) {
	if a.gas != nil {
		call := simulate.CallArgs{From: args.From, To: args.To, Value: args.Value, AccessList: args.AccessList}
		if len(data) > 0 {
			input := hexutil.Bytes(data)
			call.Input = &input
		}
		if len(args.AuthorizationList) > 0 {
			call.AuthorizationList = args.AuthorizationList
		}
		return a.gas.EstimateGas(ctx, call, ethjson.BlockRef{Tag: ethjson.TagPending})
	}
	if args.To != nil && len(data) == 0 && args.AccessList == nil && len(args.AuthorizationList) == 0 {
		acct, err := st.Account(*args.To)
		if err == nil && (acct == nil || bytes.Equal(acct.CodeHash, types.EmptyCodeHash.Bytes())) {
			return params.TxGas, nil
		}
	}
	return 0, &rpc.ServerError{Msg: "gas not given and cannot be estimated on this node: pass \"gas\""}
}

// argsTx decodes the single transaction-arguments parameter and builds the
// signed transaction.
func (a *API) argsTx(ctx context.Context, p rpc.Params) (*types.Transaction, *txArgs, error) {
	if err := p.Max(1); err != nil {
		return nil, nil, err
	}
	var args txArgs
	if err := p.Required(0, &args); err != nil {
		return nil, nil, err
	}
	tx, err := a.buildTx(ctx, &args)
	return tx, &args, err
}

func (a *API) sendTransaction(ctx context.Context, p rpc.Params) (any, error) {
	tx, _, err := a.argsTx(ctx, p)
	if err != nil {
		return nil, err
	}
	if _, err := a.s.Admit(tx); err != nil {
		return nil, poolError(err)
	}
	return tx.Hash(), nil
}

func (a *API) signTransaction(ctx context.Context, p rpc.Params) (any, error) {
	tx, args, err := a.argsTx(ctx, p)
	if err != nil {
		return nil, err
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return map[string]any{"raw": hexutil.Bytes(raw), "tx": a.rpcTx(tx, *args.From)}, nil
}

// signText signs data with the EIP-191 personal-message prefix.
func (a *API) signText(addr common.Address, data []byte) (any, error) {
	key, ok := a.keys[addr]
	if !ok {
		return nil, &rpc.ServerError{Msg: "unknown account"}
	}
	msg := fmt.Sprintf("\x19Ethereum Signed Message:\n%d%s", len(data), data)
	sig, err := crypto.Sign(crypto.Keccak256([]byte(msg)), key)
	if err != nil {
		return nil, &rpc.ServerError{Msg: err.Error()}
	}
	sig[crypto.RecoveryIDOffset] += 27
	return hexutil.Bytes(sig), nil
}

// signHandler decodes (address, data) at positions addrAt and dataAt (eth_sign
// and personal_sign differ only in order) and signs.
func (a *API) signHandler(addrAt, dataAt, maxParams int) rpc.Handler {
	return func(_ context.Context, p rpc.Params) (any, error) {
		var (
			addr common.Address
			data hexutil.Bytes
		)
		if err := p.Max(maxParams); err != nil {
			return nil, err
		}
		if err := p.Required(addrAt, &addr); err != nil {
			return nil, err
		}
		if err := p.Required(dataAt, &data); err != nil {
			return nil, err
		}
		return a.signText(addr, data)
	}
}

// rpcTx is a pooled transaction as go-ethereum's txpool_content shows it.
func (a *API) rpcTx(tx *types.Transaction, from common.Address) map[string]any {
	raw, _ := tx.MarshalJSON()
	out := make(map[string]any)
	_ = json.Unmarshal(raw, &out)
	out["from"] = from
	out["blockHash"] = nil
	out["blockNumber"] = nil
	out["transactionIndex"] = nil
	out["blockTimestamp"] = nil
	if _, ok := out["gasPrice"]; !ok {
		out["gasPrice"] = (*hexutil.Big)(tx.GasFeeCap())
	}
	return out
}

func (a *API) nonceOf() func(common.Address) uint64 {
	_, st, err := a.s.poolEnv()
	return func(addr common.Address) uint64 {
		if err != nil {
			return 0
		}
		acct, err := st.Account(addr)
		if err != nil || acct == nil {
			return 0
		}
		return acct.Nonce
	}
}

func (a *API) txpoolStatus(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(0); err != nil {
		return nil, err
	}
	pend, queued := a.s.pool.Content(a.nonceOf())
	count := func(m map[common.Address][]*ptxpool.Entry) (n int) {
		for _, l := range m {
			n += len(l)
		}
		return n
	}
	return map[string]hexutil.Uint{"pending": hexutil.Uint(count(pend)), "queued": hexutil.Uint(count(queued))}, nil
}

// byAccount renders pooled transactions as go-ethereum's txpool_* maps:
// checksummed sender → decimal nonce → f(entry).
func byAccount[T any](m map[common.Address][]*ptxpool.Entry, f func(*ptxpool.Entry) T) map[string]map[string]T {
	out := make(map[string]map[string]T, len(m))
	for addr, list := range m {
		txs := make(map[string]T, len(list))
		for _, e := range list {
			txs[strconv.FormatUint(e.Tx.Nonce(), 10)] = f(e)
		}
		out[addr.Hex()] = txs
	}
	return out
}

func (a *API) txpoolContent(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(0); err != nil {
		return nil, err
	}
	pend, queued := a.s.pool.Content(a.nonceOf())
	conv := func(e *ptxpool.Entry) map[string]any { return a.rpcTx(e.Tx, e.From) }
	return map[string]any{"pending": byAccount(pend, conv), "queued": byAccount(queued, conv)}, nil
}

func (a *API) txpoolInspect(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(0); err != nil {
		return nil, err
	}
	pend, queued := a.s.pool.Content(a.nonceOf())
	conv := func(e *ptxpool.Entry) string {
		to := "contract creation"
		if e.Tx.To() != nil {
			to = e.Tx.To().Hex()
		}
		return fmt.Sprintf("%s: %v wei + %v gas × %v wei", to, e.Tx.Value(), e.Tx.Gas(), e.Tx.GasFeeCap())
	}
	return map[string]any{"pending": byAccount(pend, conv), "queued": byAccount(queued, conv)}, nil
}
