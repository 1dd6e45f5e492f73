package simulate

import (
	"bytes"
	"fmt"
	"math/big"
	"slices"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/holiman/uint256"
)

// AccountOverride replaces parts of one account before execution. State
// replaces the whole storage; StateDiff changes only the slots it names (the
// other slots keep their values — including pre-confirmed ones at pending).
type AccountOverride struct {
	Nonce            *hexutil.Uint64             `json:"nonce"`
	Code             *hexutil.Bytes              `json:"code"`
	Balance          *hexutil.Big                `json:"balance"`
	State            map[common.Hash]common.Hash `json:"state"`
	StateDiff        map[common.Hash]common.Hash `json:"stateDiff"`
	MovePrecompileTo *common.Address             `json:"movePrecompileToAddress"`
}

// StateOverride maps accounts to their overrides.
type StateOverride map[common.Address]AccountOverride

// Apply writes the overrides into db and updates precompiles (a precompile
// that is overridden or moved stops being one at its address; a moved one
// starts at its destination). Accounts are processed in address order so
// errors are deterministic. The changes are finalised as if a transaction had
// made them.
func (o StateOverride) Apply(db *state.StateDB, precompiles vm.PrecompiledContracts) error {
	if len(o) == 0 {
		return nil
	}
	var buf [4]common.Address // most requests override a few accounts
	addrs := buf[:0]
	for a := range o {
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, func(a, b common.Address) int { return bytes.Compare(a[:], b[:]) })
	var movedTo map[common.Address]bool // made by the first move
	for _, addr := range addrs {
		acct := o[addr]
		if movedTo[addr] {
			return fmt.Errorf("account %s has already been overridden by a precompile", addr.Hex())
		}
		pc, isPrecompile := precompiles[addr]
		if dst := acct.MovePrecompileTo; dst != nil {
			if !isPrecompile {
				return fmt.Errorf("account %s is not a precompile", addr.Hex())
			}
			if _, taken := o[*dst]; taken {
				return fmt.Errorf("account %s is already overridden", dst.Hex())
			}
			precompiles[*dst] = pc
			if movedTo == nil {
				movedTo = make(map[common.Address]bool)
			}
			movedTo[*dst] = true
		}
		if isPrecompile {
			delete(precompiles, addr)
		}
		if acct.Nonce != nil {
			db.SetNonce(addr, uint64(*acct.Nonce), tracing.NonceChangeUnspecified)
		}
		if acct.Code != nil {
			db.SetCode(addr, *acct.Code, tracing.CodeChangeUnspecified)
		}
		if acct.Balance != nil {
			bal, _ := uint256.FromBig(acct.Balance.ToInt())
			if bal == nil {
				bal = new(uint256.Int)
			}
			db.SetBalance(addr, bal, tracing.BalanceChangeUnspecified)
		}
		if acct.State != nil && acct.StateDiff != nil {
			return fmt.Errorf("account %s has both 'state' and 'stateDiff'", addr.Hex())
		}
		if acct.State != nil {
			db.SetStorage(addr, acct.State)
		}
		for k, v := range acct.StateDiff {
			db.SetState(addr, k, v)
		}
	}
	db.Finalise(false)
	return nil
}

// BlockOverrides replaces fields of a block's environment.
type BlockOverrides struct {
	Number        *hexutil.Big       `json:"number"`
	Difficulty    *hexutil.Big       `json:"difficulty"`
	Time          *hexutil.Uint64    `json:"time"`
	GasLimit      *hexutil.Uint64    `json:"gasLimit"`
	FeeRecipient  *common.Address    `json:"feeRecipient"`
	PrevRandao    *common.Hash       `json:"prevRandao"`
	BaseFeePerGas *hexutil.Big       `json:"baseFeePerGas"`
	BlobBaseFee   *hexutil.Big       `json:"blobBaseFee"`
	BeaconRoot    *common.Hash       `json:"beaconRoot"`
	Withdrawals   *types.Withdrawals `json:"withdrawals"`
}

// applyContext overrides a call's block context (eth_call, estimateGas),
// where withdrawals and the beacon root have no meaning.
func (o *BlockOverrides) applyContext(ctx *vm.BlockContext) error {
	if o == nil {
		return nil
	}
	if o.BeaconRoot != nil {
		return &Error{Code: CodeServer, Msg: `block override "beaconRoot" is not supported for this RPC method`}
	}
	if o.Withdrawals != nil {
		return &Error{Code: CodeServer, Msg: `block override "withdrawals" is not supported for this RPC method`}
	}
	if o.Number != nil {
		ctx.BlockNumber = new(big.Int).Set(o.Number.ToInt())
	}
	if o.Difficulty != nil {
		ctx.Difficulty = new(big.Int).Set(o.Difficulty.ToInt())
	}
	if o.Time != nil {
		ctx.Time = uint64(*o.Time)
	}
	if o.GasLimit != nil {
		ctx.GasLimit = uint64(*o.GasLimit)
	}
	if o.FeeRecipient != nil {
		ctx.Coinbase = *o.FeeRecipient
	}
	if o.PrevRandao != nil {
		r := *o.PrevRandao
		ctx.Random = &r
	}
	if o.BaseFeePerGas != nil {
		ctx.BaseFee = new(big.Int).Set(o.BaseFeePerGas.ToInt())
	}
	if o.BlobBaseFee != nil {
		ctx.BlobBaseFee = new(big.Int).Set(o.BlobBaseFee.ToInt())
	}
	return nil
}

// header returns a copy of h with the overridden header fields (the blob
// base fee has no header field and is applied to the context instead).
func (o *BlockOverrides) header(h *types.Header) *types.Header {
	if o == nil {
		return h
	}
	c := types.CopyHeader(h)
	o.applyHeader(c)
	return c
}

// applyHeader writes the overridden header fields into h.
func (o *BlockOverrides) applyHeader(h *types.Header) {
	if o.Number != nil {
		h.Number = new(big.Int).Set(o.Number.ToInt())
	}
	if o.Difficulty != nil {
		h.Difficulty = new(big.Int).Set(o.Difficulty.ToInt())
	}
	if o.Time != nil {
		h.Time = uint64(*o.Time)
	}
	if o.GasLimit != nil {
		h.GasLimit = uint64(*o.GasLimit)
	}
	if o.FeeRecipient != nil {
		h.Coinbase = *o.FeeRecipient
	}
	if o.PrevRandao != nil {
		h.MixDigest = *o.PrevRandao
	}
	if o.BaseFeePerGas != nil {
		h.BaseFee = new(big.Int).Set(o.BaseFeePerGas.ToInt())
	}
}
