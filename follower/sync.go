package follower

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/seqapi"
)

// eth_sendRawTransactionSync (EIP-7966) on a follower, as Base's node
// answers it on a replica: the transaction goes to the upstream
// (eth_sendRawTransaction), and the answer is its receipt from this
// follower's own pending state as soon as a flashblock pre-confirms it —
// the moment the client can read it here at "pending" — or, if it was
// sealed in a block whose flashblocks this follower missed, the sealed
// receipt. Parameters, timeouts (default 20 s, at most 60 s), the nonce-gap
// error and the timeout error (code 4, the hash as data) are the
// sequencer's (package seqapi).

// txWaiters are the callers waiting for their transactions, woken by the
// loop when a snapshot or a sealed head holds them.
type txWaiters struct {
	mu sync.Mutex
	m  map[common.Hash][]chan struct{}
}

// add registers a wait for hash; cancel must be called when done.
func (w *txWaiters) add(hash common.Hash) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[common.Hash][]chan struct{})
	}
	w.m[hash] = append(w.m[hash], ch)
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		list := w.m[hash]
		for i, c := range list {
			if c == ch {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(w.m, hash)
		} else {
			w.m[hash] = list
		}
	}
}

// notify wakes the waiters of the given transactions (cheap when none wait).
func (w *txWaiters) notify(hashes func(yield func(common.Hash) bool)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.m) == 0 {
		return
	}
	for h := range hashes {
		for _, ch := range w.m[h] {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// txHashes iterates over transactions' hashes.
func txHashes(txs []*types.Transaction) func(yield func(common.Hash) bool) {
	return func(yield func(common.Hash) bool) {
		for _, tx := range txs {
			if !yield(tx.Hash()) {
				return
			}
		}
	}
}

// hashList iterates over a list of hashes.
func hashList(hs []common.Hash) func(yield func(common.Hash) bool) {
	return func(yield func(common.Hash) bool) {
		for _, h := range hs {
			if !yield(h) {
				return
			}
		}
	}
}

// sendRawTransactionSync is the handler; receipt answers
// eth_getTransactionReceipt as this follower routes it (pre-confirmed:
// locally; otherwise: the upstream).
func (f *Follower) sendRawTransactionSync(receipt rpc.Handler, cache *lru[string, json.RawMessage]) rpc.Handler {
	send := f.forwarder("eth_sendRawTransaction", cache)
	return func(ctx context.Context, p rpc.Params) (any, error) {
		if err := p.Max(2); err != nil {
			return nil, err
		}
		var input hexutil.Bytes
		if err := p.Required(0, &input); err != nil {
			return nil, err
		}
		tx := new(types.Transaction)
		if err := tx.UnmarshalBinary(input); err != nil {
			return nil, &rpc.ServerError{Msg: err.Error()}
		}
		timeout, err := seqapi.SyncTimeout(p)
		if err != nil {
			return nil, err
		}
		hash := tx.Hash()
		hashParam := rpc.Params{json.RawMessage(`"` + hash.Hex() + `"`)}
		woken, cancel := f.waiters.add(hash)
		defer cancel()
		if _, err := send(ctx, p[:1]); err != nil && !alreadyKnown(err) {
			return nil, err
		}
		if gap := f.nonceGap(tx); gap != nil {
			return nil, gap
		}
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		for {
			if f.preconfirmed(hashParam) {
				return receipt(ctx, hashParam)
			}
			select {
			case <-woken:
				if f.preconfirmed(hashParam) {
					continue
				}
				// sealed without this follower seeing it pre-confirmed
				if r, err := receipt(ctx, hashParam); err == nil && !isNull(r) {
					return r, nil
				}
			case <-timer.C:
				// Not the upstream's receipt: it may be pre-confirmed there
				// and not here yet, and the promise is that this follower
				// shows what it answered.
				if f.preconfirmed(hashParam) {
					return receipt(ctx, hashParam)
				}
				return nil, seqapi.SyncTimeoutError(timeout, hash)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
}

// alreadyKnown: the upstream has the transaction (a retry of the same
// send); wait for it as for a new one.
func alreadyKnown(err error) bool {
	ce, ok := err.(*rpc.CodedError)
	return ok && (ce.Msg == "already known" || ce.Msg == "known transaction" || ce.Msg == "transaction already imported")
}

// nonceGap is EIP-7966's nonce-gap error when tx's nonce is past its
// sender's next nonce at this follower's pending state (nil: no gap, or
// the state cannot be read: the timeout will tell).
func (f *Follower) nonceGap(tx *types.Transaction) error {
	from, err := types.Sender(types.LatestSigner(f.cfg.Chain), tx)
	if err != nil {
		return nil
	}
	var next uint64
	if snap := f.src.Current(); snap != nil {
		a, err := snap.State.Account(from)
		if err != nil {
			return nil
		}
		if a != nil {
			next = a.Nonce
		}
	} else if h := f.Head(); h != nil {
		a, err := f.stateAt(h).Account(from)
		if err != nil {
			return nil
		}
		if a != nil {
			next = a.Nonce
		}
	}
	if tx.Nonce() > next {
		return seqapi.NonceGapError(tx.Nonce(), next)
	}
	return nil
}

// isNull reports whether a handler's result is JSON null.
func isNull(v any) bool {
	if v == nil {
		return true
	}
	raw, ok := v.(json.RawMessage)
	return ok && (len(raw) == 0 || string(raw) == "null")
}
