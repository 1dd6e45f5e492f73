package seqapi

import (
	"context"
	"crypto/ecdsa"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/impersonate"
	"github.com/preconf/preconf/rpc"
)

func (a *API) accounts(context.Context, rpc.Params) (any, error) { return a.list, nil }

// buildTx fills defaults (nonce, fees, gas) and signs with the dev key, or
// marks the transaction as sent by an impersonated account
// (anvil_impersonateAccount) that has none.
func (a *API) buildTx(ctx context.Context, args *txArgs) (*types.Transaction, error) {
	key, err := a.key(args)
	impersonated := err != nil && args.From != nil && a.s.Impersonating(*args.From)
	if err != nil && !impersonated {
		return nil, err
	}
	tx, err := a.fillTx(ctx, args)
	if err != nil {
		return nil, err
	}
	if impersonated {
		marked, err := impersonate.Sign(tx, a.s.Signer(), *args.From)
		if err != nil {
			return nil, &rpc.ServerError{Msg: err.Error()}
		}
		return marked, nil
	}
	signed, err := types.SignTx(tx, a.s.Signer(), key)
	if err != nil {
		return nil, &rpc.ServerError{Msg: err.Error()}
	}
	return signed, nil
}

// key is the dev key of the arguments' sender.
func (a *API) key(args *txArgs) (*ecdsa.PrivateKey, error) {
	if args.From == nil {
		return nil, &rpc.InvalidParamsError{Msg: "missing \"from\""}
	}
	key, ok := a.keys[*args.From]
	if !ok {
		return nil, &rpc.ServerError{Msg: "unknown account"}
	}
	return key, nil
}

// txArgsParam decodes the single transaction-arguments parameter.
func txArgsParam(p rpc.Params) (*txArgs, error) {
	if err := p.Max(1); err != nil {
		return nil, err
	}
	var args txArgs
	if err := p.Required(0, &args); err != nil {
		return nil, err
	}
	return &args, nil
}

func (a *API) sendTransaction(ctx context.Context, p rpc.Params) (any, error) {
	args, err := txArgsParam(p)
	if err != nil {
		return nil, err
	}
	if d, ok, err := depositRequest(p, args); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return a.sendDeposit(ctx, d, args)
	}
	tx, err := a.buildTx(ctx, args)
	if err != nil {
		return nil, err
	}
	// admit, not Admit: the transaction was built here, and an impersonated
	// sender's mark is the node's own.
	res, err := a.s.AdmitBuilt(tx)
	if err != nil {
		return nil, Coded(err, rpc.CodeServer)
	}
	if err := a.s.Automine(ctx, res); err != nil {
		return nil, mineError(err)
	}
	return tx.Hash(), nil
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
