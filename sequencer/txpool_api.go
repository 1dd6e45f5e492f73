package sequencer

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/rpc"
	ptxpool "github.com/preconf/preconf/txpool"
)

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
