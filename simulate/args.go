package simulate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"
)

// CallArgs is a call object as eth_call, eth_estimateGas, eth_createAccessList
// and eth_simulateV1 take it. Every field is optional; defaults are filled
// per method (see Defaults). "type" is accepted and, as in go-ethereum, does
// not choose anything: the fee fields do.
type CallArgs struct {
	From                 *common.Address              `json:"from"`
	To                   *common.Address              `json:"to"`
	Gas                  *hexutil.Uint64              `json:"gas"`
	GasPrice             *hexutil.Big                 `json:"gasPrice"`
	MaxFeePerGas         *hexutil.Big                 `json:"maxFeePerGas"`
	MaxPriorityFeePerGas *hexutil.Big                 `json:"maxPriorityFeePerGas"`
	Value                *hexutil.Big                 `json:"value"`
	Nonce                *hexutil.Uint64              `json:"nonce"`
	Data                 *hexutil.Bytes               `json:"data"`
	Input                *hexutil.Bytes               `json:"input"`
	AccessList           *types.AccessList            `json:"accessList"`
	ChainID              *hexutil.Big                 `json:"chainId"`
	BlobFeeCap           *hexutil.Big                 `json:"maxFeePerBlobGas"`
	BlobHashes           []common.Hash                `json:"blobVersionedHashes"`
	AuthorizationList    []types.SetCodeAuthorization `json:"authorizationList"`
	Type                 json.RawMessage              `json:"type"`
}

// sender is the call's from address (zero when absent).
func (a *CallArgs) sender() common.Address {
	if a.From == nil {
		return common.Address{}
	}
	return *a.From
}

// calldata prefers "input" over the legacy "data".
func (a *CallArgs) calldata() []byte {
	switch {
	case a.Input != nil:
		return *a.Input
	case a.Data != nil:
		return *a.Data
	}
	return nil
}

// callDefaults fills what an eth_call-style execution needs: chain id (which
// must match when given), a gas limit (gasCap when absent, and never above a
// non-zero gasCap), nonce and value zero, and zero fees in the style the block
// needs (1559 fields when there is a base fee, a gas price otherwise).
func (a *CallArgs) callDefaults(gasCap uint64, baseFee, chainID *big.Int) error {
	if a.GasPrice != nil && (a.MaxFeePerGas != nil || a.MaxPriorityFeePerGas != nil) {
		return errors.New("both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified")
	}
	if a.ChainID == nil {
		a.ChainID = (*hexutil.Big)(chainID)
	} else if have := a.ChainID.ToInt(); have.Cmp(chainID) != 0 {
		return fmt.Errorf("chainId does not match node's (have=%v, want=%v)", have, chainID)
	}
	switch {
	case a.Gas == nil:
		gas := gasCap
		if gas == 0 {
			gas = math.MaxUint64 / 2
		}
		a.Gas = (*hexutil.Uint64)(&gas)
	case gasCap > 0 && uint64(*a.Gas) > gasCap:
		capped := gasCap
		a.Gas = (*hexutil.Uint64)(&capped)
	}
	if a.Nonce == nil {
		a.Nonce = new(hexutil.Uint64)
	}
	if a.Value == nil {
		a.Value = new(hexutil.Big)
	}
	if baseFee == nil {
		if a.GasPrice == nil {
			a.GasPrice = new(hexutil.Big)
		}
	} else {
		if a.MaxFeePerGas == nil {
			a.MaxFeePerGas = new(hexutil.Big)
		}
		if a.MaxPriorityFeePerGas == nil {
			a.MaxPriorityFeePerGas = new(hexutil.Big)
		}
	}
	if a.BlobFeeCap == nil && a.BlobHashes != nil {
		a.BlobFeeCap = new(hexutil.Big)
	}
	return nil
}

// feeDefaults fills fees as a wallet would before sending (eth_createAccessList):
// a legacy gas price or both 1559 caps, the tip from suggestTip and the fee
// cap as tip + 2 × base fee; blob fee cap twice the blob base fee.
func (a *CallArgs) feeDefaults(isLondon, isCancun bool, baseFee, blobBaseFee *big.Int, suggestTip func() *big.Int) error {
	if a.BlobFeeCap != nil && a.BlobFeeCap.ToInt().Sign() == 0 {
		return errors.New("maxFeePerBlobGas, if specified, must be non-zero")
	}
	if isCancun && a.BlobHashes != nil && a.BlobFeeCap == nil && blobBaseFee != nil {
		a.BlobFeeCap = (*hexutil.Big)(new(big.Int).Mul(blobBaseFee, big.NewInt(2)))
	}
	if a.GasPrice != nil && (a.MaxFeePerGas != nil || a.MaxPriorityFeePerGas != nil) {
		return errors.New("both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified")
	}
	if a.GasPrice != nil && a.AuthorizationList != nil {
		return errors.New("both gasPrice and authorizationList specified")
	}
	full1559 := a.MaxFeePerGas != nil && a.MaxPriorityFeePerGas != nil
	if a.GasPrice == nil && full1559 {
		if a.MaxFeePerGas.ToInt().Sign() == 0 {
			return errors.New("maxFeePerGas must be non-zero")
		}
		if a.MaxFeePerGas.ToInt().Cmp(a.MaxPriorityFeePerGas.ToInt()) < 0 {
			return fmt.Errorf("maxFeePerGas (%v) < maxPriorityFeePerGas (%v)", a.MaxFeePerGas, a.MaxPriorityFeePerGas)
		}
		return nil
	}
	if a.GasPrice != nil {
		if a.GasPrice.ToInt().Sign() == 0 && isLondon {
			return errors.New("gasPrice must be non-zero after london fork")
		}
		return nil
	}
	if !isLondon {
		if a.MaxFeePerGas != nil || a.MaxPriorityFeePerGas != nil {
			return errors.New("maxFeePerGas and maxPriorityFeePerGas are not valid before London is active")
		}
		a.GasPrice = (*hexutil.Big)(suggestTip())
		return nil
	}
	if a.MaxPriorityFeePerGas == nil {
		a.MaxPriorityFeePerGas = (*hexutil.Big)(suggestTip())
	}
	if a.MaxFeePerGas == nil {
		fee := new(big.Int).Mul(baseFee, big.NewInt(2))
		a.MaxFeePerGas = (*hexutil.Big)(fee.Add(fee, a.MaxPriorityFeePerGas.ToInt()))
	}
	if a.MaxFeePerGas.ToInt().Cmp(a.MaxPriorityFeePerGas.ToInt()) < 0 {
		return fmt.Errorf("maxFeePerGas (%v) < maxPriorityFeePerGas (%v)", a.MaxFeePerGas, a.MaxPriorityFeePerGas)
	}
	return nil
}

// bigOrNew is b's value, or a fresh zero when absent (core.Message's fields
// are read, never written, by the state transition).
func bigOrNew(b *hexutil.Big) *big.Int {
	if b == nil {
		return new(big.Int)
	}
	return b.ToInt()
}

// message turns defaulted args into a core.Message. With a base fee the 1559
// fields are used (a legacy gas price stands for both caps), and the
// effective gas price is min(tip + base fee, fee cap), or zero when every fee
// field is zero. Transaction-level checks (sender is an EOA, fee caps) are
// always skipped; nonce checks when skipNonce is set.
func (a *CallArgs) message(baseFee *big.Int, skipNonce bool) *core.Message {
	var price, feeCap, tipCap *big.Int
	switch {
	case baseFee == nil || a.GasPrice != nil:
		price = bigOrNew(a.GasPrice)
		feeCap, tipCap = price, price
	default:
		feeCap, tipCap = bigOrNew(a.MaxFeePerGas), bigOrNew(a.MaxPriorityFeePerGas)
		price = new(big.Int)
		if feeCap.Sign() != 0 || tipCap.Sign() != 0 {
			price.Add(tipCap, baseFee)
			if price.Cmp(feeCap) > 0 {
				price.Set(feeCap)
			}
		}
	}
	var al types.AccessList
	if a.AccessList != nil {
		al = *a.AccessList
	}
	return &core.Message{
		From:                  a.sender(),
		To:                    a.To,
		Value:                 bigOrNew(a.Value),
		Nonce:                 uint64(*a.Nonce),
		GasLimit:              uint64(*a.Gas),
		GasPrice:              price,
		GasFeeCap:             feeCap,
		GasTipCap:             tipCap,
		Data:                  a.calldata(),
		AccessList:            al,
		BlobHashes:            a.BlobHashes,
		BlobGasFeeCap:         bigOrNew(a.BlobFeeCap),
		SetCodeAuthorizations: a.AuthorizationList,
		SkipNonceChecks:       skipNonce,
		SkipTransactionChecks: true,
	}
}

// bigOrZero is b, or zero when absent, for the transaction fields handed to
// types.NewTx, which copies them: read-only, not a copy.
func bigOrZero(b *hexutil.Big) *big.Int {
	if b == nil {
		return zeroBig
	}
	return b.ToInt()
}

var zeroBig = new(big.Int)

// txType is the type of the transaction the call makes: the fee and list
// fields choose it, as in go-ethereum, and defaultType when none does.
func (a *CallArgs) txType(defaultType byte) byte {
	if a.GasPrice != nil {
		return types.LegacyTxType
	}
	switch {
	case a.AuthorizationList != nil || defaultType == types.SetCodeTxType:
		return types.SetCodeTxType
	case a.BlobHashes != nil || defaultType == types.BlobTxType:
		return types.BlobTxType
	case a.MaxFeePerGas != nil || defaultType == types.DynamicFeeTxType:
		return types.DynamicFeeTxType
	case a.AccessList != nil || defaultType == types.AccessListTxType:
		return types.AccessListTxType
	}
	return types.LegacyTxType
}

// transaction builds the (unsigned) transaction the args describe, for block
// bodies and hashes. The type follows the fields present: an authorization
// list makes a set-code tx, blob hashes a blob tx, 1559 caps a dynamic-fee
// tx, an access list an access-list tx, and a gas price always a legacy tx;
// with none of them, defaultType decides.
func (a *CallArgs) transaction(defaultType byte) *types.Transaction {
	typ := a.txType(defaultType)
	al := types.AccessList{}
	if a.AccessList != nil {
		al = *a.AccessList
	}
	var to common.Address
	if a.To != nil {
		to = *a.To
	}
	var data types.TxData
	switch typ {
	case types.SetCodeTxType:
		auths := a.AuthorizationList
		if auths == nil {
			auths = []types.SetCodeAuthorization{}
		}
		data = &types.SetCodeTx{
			ChainID: u256(a.ChainID), Nonce: uint64(*a.Nonce), Gas: uint64(*a.Gas),
			GasTipCap: u256(a.MaxPriorityFeePerGas), GasFeeCap: u256(a.MaxFeePerGas),
			To: to, Value: u256(a.Value), Data: a.calldata(), AccessList: al, AuthList: auths,
		}
	case types.BlobTxType:
		data = &types.BlobTx{
			ChainID: u256(a.ChainID), Nonce: uint64(*a.Nonce), Gas: uint64(*a.Gas),
			GasTipCap: u256(a.MaxPriorityFeePerGas), GasFeeCap: u256(a.MaxFeePerGas),
			To: to, Value: u256(a.Value), Data: a.calldata(), AccessList: al,
			BlobFeeCap: u256(a.BlobFeeCap), BlobHashes: a.BlobHashes,
		}
	case types.DynamicFeeTxType:
		data = &types.DynamicFeeTx{
			ChainID: bigOrZero(a.ChainID), Nonce: uint64(*a.Nonce), Gas: uint64(*a.Gas),
			GasTipCap: bigOrZero(a.MaxPriorityFeePerGas), GasFeeCap: bigOrZero(a.MaxFeePerGas),
			To: a.To, Value: bigOrZero(a.Value), Data: a.calldata(), AccessList: al,
		}
	case types.AccessListTxType:
		data = &types.AccessListTx{
			ChainID: bigOrZero(a.ChainID), Nonce: uint64(*a.Nonce), Gas: uint64(*a.Gas),
			GasPrice: bigOrZero(a.GasPrice), To: a.To, Value: bigOrZero(a.Value),
			Data: a.calldata(), AccessList: al,
		}
	default:
		data = &types.LegacyTx{
			Nonce: uint64(*a.Nonce), Gas: uint64(*a.Gas), GasPrice: bigOrZero(a.GasPrice),
			To: a.To, Value: bigOrZero(a.Value), Data: a.calldata(),
		}
	}
	return types.NewTx(data)
}

// u256 is b as the uint256 that typed transactions hold (zero when absent or
// out of range).
func u256(b *hexutil.Big) *uint256.Int {
	if b == nil {
		return new(uint256.Int)
	}
	v, overflow := uint256.FromBig(b.ToInt())
	if overflow {
		return new(uint256.Int)
	}
	return v
}
