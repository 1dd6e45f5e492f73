package seqapi

// Filling in a transaction: what eth_sendTransaction, eth_signTransaction and
// eth_fillTransaction leave out is chosen for the pending block.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/simulate"
	ptxpool "github.com/preconf/preconf/txpool"
)

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

// DefaultTip is the priority fee eth_sendTransaction pays when none is
// given; OPDefaultTip on OP-stack chains, op-geth's minimum suggestion there
// (its eth_maxPriorityFeePerGas while blocks have room).
var (
	DefaultTip   = big.NewInt(params.GWei)
	OPDefaultTip = big.NewInt(1_000_000)
)

// fillTx is the unsigned transaction the arguments describe, with what they
// leave out filled in for the pending block: the sender's pool nonce (the
// zero address's without "from", as go-ethereum), the gas estimated at
// pending, the fees (txData) and the chain id.
func (a *API) fillTx(ctx context.Context, args *txArgs) (*types.Transaction, error) {
	typ, data, err := a.checkArgs(args)
	if err != nil {
		return nil, err
	}
	head, st, err := a.s.PendingEnv()
	if err != nil {
		return nil, &rpc.ServerError{Msg: err.Error()}
	}
	if head.BaseFee == nil {
		return nil, &rpc.ServerError{Msg: "pending block has no base fee (pre-London chain)"}
	}
	var from common.Address
	if args.From != nil {
		from = *args.From
	}
	f := txFields{data: data, value: new(big.Int)}
	if args.Nonce != nil {
		f.nonce = uint64(*args.Nonce)
	} else {
		var stateNonce uint64
		if acct, err := st.Account(from); err == nil && acct != nil {
			stateNonce = acct.Nonce
		}
		f.nonce = a.s.Pool().PendingNonce(from, stateNonce)
	}
	if args.Value != nil {
		f.value = args.Value.ToInt()
	}
	if args.Gas != nil {
		f.gas = uint64(*args.Gas)
	} else if f.gas, err = a.estimate(ctx, args, st, data); err != nil {
		return nil, err
	}
	tip := DefaultTip
	if a.s.OPStack() {
		tip = OPDefaultTip
	}
	inner, err := f.txData(args, typ, head.BaseFee, tip, a.s.ChainConfig().ChainID)
	if err != nil {
		return nil, err
	}
	return types.NewTx(inner), nil
}

// checkArgs validates transaction arguments and returns the requested type
// (nil: none) and the calldata.
func (a *API) checkArgs(args *txArgs) (*uint64, []byte, error) {
	typ, err := txType(args)
	if err != nil {
		return nil, nil, err
	}
	if len(args.BlobHashes) > 0 || (typ != nil && *typ == types.BlobTxType) {
		return nil, nil, &rpc.ServerError{Msg: ptxpool.ErrBlobTx.Error()}
	}
	if args.Data != nil && args.Input != nil && !bytes.Equal(*args.Data, *args.Input) {
		return nil, nil, &rpc.InvalidParamsError{Msg: `both "data" and "input" are set and not equal. Please use "input" to pass transaction call data`}
	}
	var data []byte
	if args.Input != nil {
		data = *args.Input
	} else if args.Data != nil {
		data = *args.Data
	}
	if args.To == nil && len(data) == 0 {
		return nil, nil, &rpc.ServerError{Msg: "contract creation without any data provided"}
	}
	if chainID := a.s.ChainConfig().ChainID; args.ChainID != nil && args.ChainID.ToInt().Cmp(chainID) != 0 {
		return nil, nil, &rpc.InvalidParamsError{Msg: fmt.Sprintf("chainId does not match node's (have=%v, want=%v)", args.ChainID.ToInt(), chainID)}
	}
	return typ, data, nil
}

// txFields are a transaction's nonce, gas, value and calldata once defaults
// are filled in.
type txFields struct {
	nonce, gas uint64
	value      *big.Int
	data       []byte
}

// txData chooses the transaction type (legacy or access list when a gas
// price alone is given or the type asks for it, EIP-7702 with an
// authorization list, EIP-1559 otherwise) and its fees: the tip defaults to
// defaultTip, the fee cap to twice the base fee plus the tip.
func (f *txFields) txData(args *txArgs, typ *uint64, baseFee, defaultTip, chainID *big.Int) (types.TxData, error) {
	var al types.AccessList
	if args.AccessList != nil {
		al = *args.AccessList
	}
	legacy := args.GasPrice != nil && args.MaxFeePerGas == nil && args.MaxPriorityFeePerGas == nil
	if typ != nil {
		legacy = *typ == types.LegacyTxType || *typ == types.AccessListTxType
	}
	if legacy {
		var price *big.Int
		if args.GasPrice != nil {
			price = args.GasPrice.ToInt()
		} else {
			price = new(big.Int).Add(baseFee, defaultTip)
		}
		if args.AccessList != nil || (typ != nil && *typ == types.AccessListTxType) {
			return &types.AccessListTx{ChainID: chainID, Nonce: f.nonce, GasPrice: price, Gas: f.gas, To: args.To, Value: f.value, Data: f.data, AccessList: al}, nil
		}
		return &types.LegacyTx{Nonce: f.nonce, GasPrice: price, Gas: f.gas, To: args.To, Value: f.value, Data: f.data}, nil
	}
	tip := defaultTip
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
		feeCap = new(big.Int).Add(new(big.Int).Mul(baseFee, big.NewInt(2)), tip)
	}
	if len(args.AuthorizationList) > 0 || (typ != nil && *typ == types.SetCodeTxType) {
		if args.To == nil {
			return nil, &rpc.ServerError{Msg: "EIP-7702 transaction cannot be used to create contract"}
		}
		return &types.SetCodeTx{
			ChainID: uint256.MustFromBig(chainID), Nonce: f.nonce, GasTipCap: uint256.MustFromBig(tip), GasFeeCap: uint256.MustFromBig(feeCap),
			Gas: f.gas, To: *args.To, Value: uint256.MustFromBig(f.value), Data: f.data, AccessList: al, AuthList: args.AuthorizationList,
		}, nil
	}
	return &types.DynamicFeeTx{ChainID: chainID, Nonce: f.nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: f.gas, To: args.To, Value: f.value, Data: f.data, AccessList: al}, nil
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

// txResult is eth_signTransaction's and eth_fillTransaction's answer, as
// go-ethereum's: the binary encoding and the transaction object.
type txResult struct {
	Raw hexutil.Bytes      `json:"raw"`
	Tx  *types.Transaction `json:"tx"`
}

func newTxResult(tx *types.Transaction) (*txResult, error) {
	raw, err := tx.MarshalBinary()
	if err != nil {
		return nil, &rpc.ServerError{Msg: err.Error()}
	}
	return &txResult{Raw: raw, Tx: tx}, nil
}

// txResultHandler answers {raw, tx} for the transaction build makes of the
// single transaction-arguments parameter: eth_signTransaction (buildTx,
// signed with the dev key) and eth_fillTransaction (fillTx: unsigned, as
// go-ethereum's, no key needed).
func (a *API) txResultHandler(build func(context.Context, *txArgs) (*types.Transaction, error)) rpc.Handler {
	return func(ctx context.Context, p rpc.Params) (any, error) {
		args, err := txArgsParam(p)
		if err != nil {
			return nil, err
		}
		if _, ok, err := depositRequest(p, args); ok || err != nil {
			return nil, &rpc.ServerError{Msg: "deposit transactions are not signed: send the request with eth_sendTransaction"}
		}
		tx, err := build(ctx, args)
		if err != nil {
			return nil, err
		}
		return newTxResult(tx)
	}
}
