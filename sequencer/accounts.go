package sequencer

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/simulate"
	ptxpool "github.com/preconf/preconf/txpool"
)

func (a *API) accounts(context.Context, rpc.Params) (any, error) { return a.list, nil }

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
	key, typ, data, err := a.checkArgs(args)
	if err != nil {
		return nil, err
	}
	head, st, err := a.s.poolEnv()
	if err != nil {
		return nil, &rpc.ServerError{Msg: err.Error()}
	}
	if head.BaseFee == nil {
		return nil, &rpc.ServerError{Msg: "pending block has no base fee (pre-London chain)"}
	}
	f := txFields{data: data, value: new(big.Int)}
	if args.Nonce != nil {
		f.nonce = uint64(*args.Nonce)
	} else {
		var stateNonce uint64
		if acct, err := st.Account(*args.From); err == nil && acct != nil {
			stateNonce = acct.Nonce
		}
		f.nonce = a.s.pool.PendingNonce(*args.From, stateNonce)
	}
	if args.Value != nil {
		f.value = args.Value.ToInt()
	}
	if args.Gas != nil {
		f.gas = uint64(*args.Gas)
	} else if f.gas, err = a.estimate(ctx, args, st, data); err != nil {
		return nil, err
	}
	inner, err := f.txData(args, typ, head.BaseFee, a.s.config.ChainID)
	if err != nil {
		return nil, err
	}
	tx, err := types.SignNewTx(key, a.s.signer, inner)
	if err != nil {
		return nil, &rpc.ServerError{Msg: err.Error()}
	}
	return tx, nil
}

// checkArgs validates eth_sendTransaction's arguments and returns the
// sender's key, the requested type (nil: none) and the calldata.
func (a *API) checkArgs(args *txArgs) (*ecdsa.PrivateKey, *uint64, []byte, error) {
	if args.From == nil {
		return nil, nil, nil, &rpc.InvalidParamsError{Msg: "missing \"from\""}
	}
	key, ok := a.keys[*args.From]
	if !ok {
		return nil, nil, nil, &rpc.ServerError{Msg: "unknown account"}
	}
	typ, err := txType(args)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(args.BlobHashes) > 0 || (typ != nil && *typ == types.BlobTxType) {
		return nil, nil, nil, &rpc.ServerError{Msg: ptxpool.ErrBlobTx.Error()}
	}
	if args.Data != nil && args.Input != nil && !bytes.Equal(*args.Data, *args.Input) {
		return nil, nil, nil, &rpc.InvalidParamsError{Msg: `both "data" and "input" are set and not equal. Please use "input" to pass transaction call data`}
	}
	var data []byte
	if args.Input != nil {
		data = *args.Input
	} else if args.Data != nil {
		data = *args.Data
	}
	if chainID := a.s.config.ChainID; args.ChainID != nil && args.ChainID.ToInt().Cmp(chainID) != 0 {
		return nil, nil, nil, &rpc.InvalidParamsError{Msg: fmt.Sprintf("chainId does not match node's (have=%v, want=%v)", args.ChainID.ToInt(), chainID)}
	}
	return key, typ, data, nil
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
// DefaultTip, the fee cap to twice the base fee plus the tip.
func (f *txFields) txData(args *txArgs, typ *uint64, baseFee, chainID *big.Int) (types.TxData, error) {
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
			price = new(big.Int).Add(baseFee, DefaultTip)
		}
		if args.AccessList != nil || (typ != nil && *typ == types.AccessListTxType) {
			return &types.AccessListTx{ChainID: chainID, Nonce: f.nonce, GasPrice: price, Gas: f.gas, To: args.To, Value: f.value, Data: f.data, AccessList: al}, nil
		}
		return &types.LegacyTx{Nonce: f.nonce, GasPrice: price, Gas: f.gas, To: args.To, Value: f.value, Data: f.data}, nil
	}
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
