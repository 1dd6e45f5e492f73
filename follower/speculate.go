package follower

import (
	"math/big"
	"runtime"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"

	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/remote"
)

// Discovery: before a flashblock's transactions execute, the state they
// will read that the upstream state does not hold yet is found by executing
// them speculatively and fetched in a few batches, instead of one round
// trip per slot as the EVM reaches it (bench follow-defi: ~20 sequential
// reads of ~3.4 ms per flashblock at 2 Mgas/s, the follower idle).
//
// A pass executes the transactions, in a few chunks at once, on their own
// StateDBs over the open block's state whose upstream reads are a
// remote.Recorder's: a value not fetched yet is recorded and answered as
// absent, zero or no code. Every miss of the pass is then fetched in one
// round trip (remote.State.FetchMisses). A chunk whose provisional answers all turned out right
// (new slots are zero: the usual case) read exactly what its real execution
// will, so it is done; the others run again, their next reads now known,
// until a pass misses nothing or the passes run out. A slot whose key
// depends on another's value costs a pass, so K layers of such dependencies
// cost K round trips.
//
// Nothing speculative is kept: the passes' StateDBs are dropped, the
// upstream state holds only fetched (verified) values, and the block's own
// execution, which alone is published, follows and reads what is still
// missing as before. A chunk starts from the state before the flashblock,
// so what an earlier chunk writes is unknown to it: a key that depends on
// it is fetched then.
const (
	discoverPasses = 4    // passes per flashblock (one fetch each)
	discoverMisses = 8192 // keys recorded per pass, over all chunks
	discoverChunk  = 4    // transactions per chunk at least
	discoverChunks = 4    // chunks at most (executed at once)
)

// discover fetches what txs, the flashblock's transactions about to be
// applied to b, read from the upstream state and it does not hold yet. It
// reports the fetch round trips made. Errors are left to the execution,
// which reads again.
func (e *executor) discover(b *openBlock, txs types.Transactions) int {
	if e.passes == 0 || len(txs) == 0 {
		e.lastFetchWait.Store(0)
		return 0
	}
	n := min(discoverChunks, runtime.GOMAXPROCS(0), (len(txs)+discoverChunk-1)/discoverChunk)
	n = max(n, 1)
	var chunks []types.Transactions
	for i := range n {
		chunks = append(chunks, txs[i*len(txs)/n:(i+1)*len(txs)/n])
	}
	rounds := 0
	var fetching time.Duration
	defer func() { e.lastFetchWait.Store(int64(fetching)) }()
	for pass := 0; pass < e.passes && len(chunks) > 0; pass++ {
		recs := make([]*remote.Recorder, len(chunks))
		var wg sync.WaitGroup
		for i, c := range chunks {
			recs[i] = b.base.Recorder(discoverMisses / len(chunks))
			if i == len(chunks)-1 {
				e.speculate(b, c, recs[i]) // on this goroutine
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				e.speculate(b, c, recs[i])
			}()
		}
		wg.Wait()
		t := time.Now()
		missed, _ := b.base.FetchMisses(recs)
		fetching += time.Since(t)
		if !missed {
			break
		}
		rounds++
		again := chunks[:0]
		for i, c := range chunks {
			if recs[i].Misses() > 0 && !recs[i].Exact() {
				again = append(again, c)
			}
		}
		chunks = again
	}
	return rounds
}

// speculate executes txs one after the other on a StateDB of b's state as
// rec reads it (its own: b's is not touched), ignoring their results.
// Nonces are not checked (a sender's earlier transaction may be in another
// chunk) and gas is free, so that a sender not fetched yet (answered
// absent) still runs its transaction and it is fetched with the slots.
func (e *executor) speculate(b *openBlock, txs types.Transactions, rec *remote.Recorder) {
	// Provisional answers can lead an execution where real state never
	// goes: should the EVM panic there, discovery stops for this chunk and
	// the real execution reads what it needs itself.
	defer func() { _ = recover() }()
	statedb, err := state.NewWithReader(b.Parent.Root, e.memdb, b.state.Rebase(rec))
	if err != nil {
		return
	}
	coinbase := b.Header.Coinbase
	evm := forkrules.NewEVM(core.NewEVMBlockContext(b.Header, e.headers, &coinbase, e.config, statedb), statedb, e.config, vm.Config{NoBaseFee: true})
	for i, tx := range txs {
		msg, err := core.TransactionToMessage(tx, e.signer, b.Header.BaseFee)
		if err != nil {
			continue
		}
		msg.SkipNonceChecks = true
		if !msg.IsDepositTx {
			msg.GasPrice, msg.GasFeeCap, msg.GasTipCap = new(big.Int), new(big.Int), new(big.Int)
			if msg.BlobGasFeeCap != nil {
				msg.BlobGasFeeCap = new(big.Int)
			}
		}
		statedb.SetTxContext(tx.Hash(), i)
		if _, err := core.ApplyMessage(evm, msg, core.NewGasPool(b.Header.GasLimit)); err == nil {
			statedb.Finalise(true)
		}
	}
}
