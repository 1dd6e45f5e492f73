package seqapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
	ptxpool "github.com/preconf/preconf/txpool"
)

// The txpool_* methods answer as go-ethereum's: the pool split into
// "pending" (executable on the pending state) and "queued" (behind a nonce
// gap). Pre-confirmed transactions have left the pool: they are in the
// pending block.

// rpcTx is a pooled transaction as go-ethereum's txpool_content shows it:
// the RPC transaction object outside any block (null block fields, the fee
// cap as gasPrice for fee-market transactions).
func (a *API) rpcTx(e *ptxpool.Entry) json.RawMessage {
	return ethjson.AppendTx(nil, e.Tx, ethjson.Loc{}, a.s.Signer())
}

// content splits the pool by the senders' nonces in the pending state.
func (a *API) content() (pending, queued map[common.Address][]*ptxpool.Entry) {
	_, st, err := a.s.PendingEnv()
	return a.s.Pool().Content(func(addr common.Address) uint64 {
		if err != nil {
			return 0
		}
		acct, err := st.Account(addr)
		if err != nil || acct == nil {
			return 0
		}
		return acct.Nonce
	})
}

func (a *API) txpoolStatus(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(0); err != nil {
		return nil, err
	}
	pend, queued := a.content()
	count := func(m map[common.Address][]*ptxpool.Entry) (n int) {
		for _, l := range m {
			n += len(l)
		}
		return n
	}
	return map[string]hexutil.Uint{"pending": hexutil.Uint(count(pend)), "queued": hexutil.Uint(count(queued))}, nil
}

// byNonce renders one sender's transactions as go-ethereum's txpool_*
// maps: decimal nonce → f(entry).
func byNonce[T any](list []*ptxpool.Entry, f func(*ptxpool.Entry) T) map[string]T {
	out := make(map[string]T, len(list))
	for _, e := range list {
		out[strconv.FormatUint(e.Tx.Nonce(), 10)] = f(e)
	}
	return out
}

// byAccount renders pooled transactions as go-ethereum's txpool_* maps:
// checksummed sender → decimal nonce → f(entry).
func byAccount[T any](m map[common.Address][]*ptxpool.Entry, f func(*ptxpool.Entry) T) map[string]map[string]T {
	out := make(map[string]map[string]T, len(m))
	for addr, list := range m {
		out[addr.Hex()] = byNonce(list, f)
	}
	return out
}

func (a *API) txpoolContent(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(0); err != nil {
		return nil, err
	}
	pend, queued := a.content()
	return map[string]any{"pending": byAccount(pend, a.rpcTx), "queued": byAccount(queued, a.rpcTx)}, nil
}

// txpoolContentFrom is txpool_content for one sender: nonce → transaction.
func (a *API) txpoolContentFrom(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(1); err != nil {
		return nil, err
	}
	var addr common.Address
	if err := p.Required(0, &addr); err != nil {
		return nil, err
	}
	pend, queued := a.content()
	return map[string]any{"pending": byNonce(pend[addr], a.rpcTx), "queued": byNonce(queued[addr], a.rpcTx)}, nil
}

func (a *API) txpoolInspect(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(0); err != nil {
		return nil, err
	}
	pend, queued := a.content()
	conv := func(e *ptxpool.Entry) string {
		to := "contract creation"
		if e.Tx.To() != nil {
			to = e.Tx.To().Hex()
		}
		return fmt.Sprintf("%s: %v wei + %v gas × %v wei", to, e.Tx.Value(), e.Tx.Gas(), e.Tx.GasFeeCap())
	}
	return map[string]any{"pending": byAccount(pend, conv), "queued": byAccount(queued, conv)}, nil
}
