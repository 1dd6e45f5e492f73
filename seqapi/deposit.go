package seqapi

import (
	"bytes"
	"context"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/sequencer"
	"github.com/preconf/preconf/simulate"
)

// Deposit requests: eth_sendTransaction with anvil --optimism's deposit
// fields injects a user deposit (Sequencer.Deposit).

// depositFields are anvil --optimism's deposit fields of a transaction
// request (OptimismTransactionFields): their presence, or "type": "0x7e",
// makes eth_sendTransaction inject a deposit.
type depositFields struct {
	SourceHash *common.Hash `json:"sourceHash"`
	Mint       *hexutil.Big `json:"mint"`
	IsSystemTx *bool        `json:"isSystemTx"`
}

// depositRequest reads p's transaction request as a deposit: ok is false
// when it has neither deposit fields nor the deposit type.
func depositRequest(p rpc.Params, args *txArgs) (d sequencer.Deposit, ok bool, err error) {
	var f depositFields
	if err := p.Required(0, &f); err != nil {
		return d, false, err
	}
	typ, err := txType(args)
	if err != nil {
		return d, false, err
	}
	isDeposit := typ != nil && *typ == types.DepositTxType
	if !isDeposit && f.SourceHash == nil && f.Mint == nil && f.IsSystemTx == nil {
		return d, false, nil
	}
	if f.IsSystemTx != nil && *f.IsSystemTx {
		return d, true, &rpc.InvalidParamsError{Msg: "system deposits (isSystemTx) are disabled since Regolith"}
	}
	if args.From == nil {
		return d, true, &rpc.InvalidParamsError{Msg: "missing \"from\""}
	}
	if args.Data != nil && args.Input != nil && !bytes.Equal(*args.Data, *args.Input) {
		return d, true, &rpc.InvalidParamsError{Msg: `both "data" and "input" are set and not equal. Please use "input" to pass transaction call data`}
	}
	d = sequencer.Deposit{From: *args.From, To: args.To}
	if args.Input != nil {
		d.Data = *args.Input
	} else if args.Data != nil {
		d.Data = *args.Data
	}
	if f.Mint != nil {
		d.Mint = f.Mint.ToInt()
	}
	if args.Value != nil {
		d.Value = args.Value.ToInt()
	}
	if f.SourceHash != nil {
		d.SourceHash = *f.SourceHash
	}
	if args.Gas != nil {
		d.Gas = uint64(*args.Gas)
	}
	return d, true, nil
}

// overrideEstimator estimates gas over state overrides (*api.API does).
type overrideEstimator interface {
	EstimateGasWith(ctx context.Context, args simulate.CallArgs, ref ethjson.BlockRef, so simulate.StateOverride) (uint64, error)
}

// sendDeposit injects the deposit of an eth_sendTransaction request. A
// missing gas limit is estimated as for a call from the depositor at
// pending, its balance credited with the mint first, as the deposit runs.
func (a *API) sendDeposit(ctx context.Context, d sequencer.Deposit, args *txArgs) (any, error) {
	if !a.s.OPStack() {
		return nil, Coded(sequencer.ErrNotOPStack, rpc.CodeServer)
	}
	if args.Gas == nil {
		gas, err := a.estimateDeposit(ctx, d, args)
		if err != nil {
			return nil, &rpc.ServerError{Msg: "deposit gas not given and not estimable (pass \"gas\"): " + err.Error()}
		}
		d.Gas = gas
	}
	hash, err := a.s.Deposit(ctx, d)
	if err != nil {
		return nil, Coded(err, rpc.CodeServer)
	}
	// Under automine the deposit is mined at once, as anvil --optimism's.
	if a.s.Mode().Automine {
		if err := a.s.Mine(ctx, sequencer.MineOptions{Blocks: 1}); err != nil {
			return nil, mineError(err)
		}
	}
	return hash, nil
}

// estimateDeposit estimates d's gas limit.
func (a *API) estimateDeposit(ctx context.Context, d sequencer.Deposit, args *txArgs) (uint64, error) {
	_, st, err := a.s.PendingEnv()
	if err != nil {
		return 0, err
	}
	est, ok := a.gas.(overrideEstimator)
	if !ok || d.Mint == nil || d.Mint.Sign() == 0 {
		return a.estimate(ctx, args, st, d.Data)
	}
	balance := new(big.Int).Set(d.Mint)
	if acct, err := st.Account(d.From); err == nil && acct != nil {
		balance.Add(balance, acct.Balance.ToBig())
	}
	call := simulate.CallArgs{From: args.From, To: args.To, Value: args.Value}
	if len(d.Data) > 0 {
		input := hexutil.Bytes(d.Data)
		call.Input = &input
	}
	so := simulate.StateOverride{d.From: {Balance: (*hexutil.Big)(balance)}}
	return est.EstimateGasWith(ctx, call, ethjson.BlockRef{Tag: ethjson.TagPending}, so)
}
