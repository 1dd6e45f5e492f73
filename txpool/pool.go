// Package txpool holds transactions accepted by eth_sendRawTransaction that
// the sequencer has not executed yet: validation with go-ethereum's rules and
// error texts, per-sender nonce ordering (gapped nonces wait in "queued"),
// replacement by fee bump, and limits. It knows nothing of blocks: the
// sequencer asks it for candidates and tells it what it executed.
package txpool

import (
	"sync/atomic"

	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/impersonate"

	"errors"
	"fmt"
	"math/big"
	"slices"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/txpool"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"
)

// Errors with go-ethereum's texts (the ones the core/txpool packages export
// are used directly).
var (
	// ErrTxPoolOverflow: the pool holds Config.GlobalSlots transactions.
	ErrTxPoolOverflow = errors.New("txpool is full")
	// ErrBlobTx: a blob transaction without its sidecar (blobs,
	// commitments, proofs), as eth_sendTransaction would have to make one.
	ErrBlobTx = fmt.Errorf("%w: a blob transaction (type 3) needs its blobs: sign it with its sidecar and send it with eth_sendRawTransaction", core.ErrTxTypeNotSupported)
	// ErrDepositTx: on an OP-stack chain deposits come from L1 (the
	// sequencer's L1-attributes deposit, the bridge's user deposits), never
	// from the pool; op-geth's pool refuses them with the same error.
	ErrDepositTx = fmt.Errorf("%w: deposit transactions (type 0x7e) come from L1, not from users; on the dev chain inject one with eth_sendTransaction and \"mint\" (see docs/sequencer.md)", core.ErrTxTypeNotSupported)
)

// Config are the pool's limits.
type Config struct {
	// AccountSlots caps the transactions (executable and queued) of one sender.
	AccountSlots int
	// GlobalSlots caps all transactions in the pool.
	GlobalSlots int
	// PriceBump is the minimum fee increase, in percent, to replace a
	// transaction with the same nonce (go-ethereum: 10).
	PriceBump uint64
	// MaxSize is the largest accepted encoded transaction (go-ethereum: 128 KiB).
	MaxSize uint64
	// MaxBlobTxSize is the largest accepted blob transaction with its
	// sidecar (go-ethereum's blob pool: 1 MiB).
	MaxBlobTxSize uint64
}

// DefaultConfig is sized for a dev chain under load tests.
var DefaultConfig = Config{AccountSlots: 8192, GlobalSlots: 65536, PriceBump: 10, MaxSize: 4 * 32 * 1024, MaxBlobTxSize: 1 << 20}

// Env is what validation reads: the pending block's header (fork rules,
// base fee, gas limit) and the pending state (nonces, balances).
type Env func() (*types.Header, state.Reader, error)

// Pool is safe for concurrent use.
type Pool struct {
	cfg    Config
	chain  *params.ChainConfig
	signer types.Signer
	env    Env

	mu       sync.Mutex
	all      map[common.Hash]*Entry
	accounts map[common.Address]*account
	seq      uint64

	nonces *nonceTable                 // pool nonces, under their own lock (nonce.go)
	rollup atomic.Pointer[rollupCosts] // OP-stack fee function of the latest env (rollup.go)
}

// Entry is a pooled transaction with its sender and arrival order.
type Entry struct {
	Tx   *types.Transaction
	From common.Address
	Seq  uint64 // arrival order, increasing
	// Cost is what the sender must hold for it: gas × fee cap + value,
	// plus on OP-stack chains the L1 data and operator fees.
	Cost *big.Int
}

type account struct {
	txs   map[uint64]*Entry
	spent *big.Int // sum of the costs of txs
}

// New returns an empty pool.
func New(cfg Config, chain *params.ChainConfig, env Env) *Pool {
	if cfg.AccountSlots <= 0 {
		cfg.AccountSlots = DefaultConfig.AccountSlots
	}
	if cfg.GlobalSlots <= 0 {
		cfg.GlobalSlots = DefaultConfig.GlobalSlots
	}
	if cfg.PriceBump == 0 {
		cfg.PriceBump = DefaultConfig.PriceBump
	}
	if cfg.MaxSize == 0 {
		cfg.MaxSize = DefaultConfig.MaxSize
	}
	if cfg.MaxBlobTxSize == 0 {
		cfg.MaxBlobTxSize = DefaultConfig.MaxBlobTxSize
	}
	// Validation takes the fork rules from the config: normalized, a Karst
	// chain's has Osaka's, whose EIP-7825 cap op-geth's validation applies.
	if n, err := forkrules.Normalize(chain); err == nil {
		chain = n
	}
	return &Pool{
		cfg: cfg, chain: chain, env: env,
		signer:   impersonate.NewSigner(types.LatestSignerForChainID(chain.ChainID)),
		all:      make(map[common.Hash]*Entry),
		accounts: make(map[common.Address]*account),
		nonces:   newNonceTable(),
	}
}

// Signer is the signer senders are recovered with.
func (p *Pool) Signer() types.Signer { return p.signer }

// acceptedTypes: every type a user sends. Blob transactions come with their
// sidecar, which the pool keeps until the transaction is executed (blocks
// carry them without); go-ethereum's validation refuses them on OP-stack
// chains, as op-geth does.
const acceptedTypes = 1<<types.LegacyTxType | 1<<types.AccessListTxType | 1<<types.DynamicFeeTxType | 1<<types.BlobTxType | 1<<types.SetCodeTxType

// Result tells how an accepted transaction stands.
type Result struct {
	From common.Address
	// Queued is true when the nonce is above the next executable one (a gap):
	// the transaction waits until the gap is filled.
	Queued bool
	// NextNonce is the sender's pool nonce after the addition: the next
	// executable nonce counting the pending state and the pool's executable
	// transactions (see PendingNonce).
	NextNonce uint64
	// Replaced is the transaction this one replaced, if any.
	Replaced *types.Transaction
	// Tx is the transaction pooled: the one added, or a copy whose blob
	// sidecar was converted to cell proofs (Osaka).
	Tx *types.Transaction
}

// Add validates tx against the pending state and the pool and inserts it.
// Errors carry go-ethereum's texts ("nonce too low: next nonce 3, tx nonce 1").
// It returns the transaction pooled, which differs from tx when a blob
// sidecar was converted (see blobSidecar).
func (p *Pool) Add(tx *types.Transaction) (Result, error) {
	if tx.Type() == types.DepositTxType && p.chain.Optimism != nil {
		return Result{}, ErrDepositTx
	}
	head, st, err := p.env()
	if err != nil {
		return Result{}, fmt.Errorf("pending state unavailable: %w", err)
	}
	opts := &txpool.ValidationOptions{Config: p.chain, Accept: acceptedTypes, MaxSize: p.cfg.MaxSize, MinTip: new(big.Int), MaxBlobCount: params.BlobTxMaxBlobs}
	if tx.Type() == types.BlobTxType {
		if tx.BlobTxSidecar() == nil {
			return Result{}, ErrBlobTx
		}
		if tx, err = p.blobSidecar(tx, head); err != nil {
			return Result{}, err
		}
		opts.MaxSize = p.cfg.MaxBlobTxSize
	}
	if err := txpool.ValidateTransaction(tx, head, p.signer, opts); err != nil {
		return Result{}, err
	}
	from, _ := types.Sender(p.signer, tx) // validated above
	if head.BaseFee != nil && tx.GasFeeCapIntCmp(head.BaseFee) < 0 {
		return Result{}, fmt.Errorf("%w: address %v, maxFeePerGas: %s, baseFee: %s", core.ErrFeeCapTooLow, from.Hex(), tx.GasFeeCap(), head.BaseFee)
	}
	var (
		nonce   uint64
		balance = new(uint256.Int)
	)
	if acct, err := st.Account(from); err != nil {
		return Result{}, fmt.Errorf("read sender state: %w", err)
	} else if acct != nil {
		nonce, balance = acct.Nonce, acct.Balance
	}
	if tx.Nonce() < nonce {
		return Result{}, fmt.Errorf("%w: next nonce %v, tx nonce %v", core.ErrNonceTooLow, nonce, tx.Nonce())
	}
	cost := tx.Cost()
	// op-geth's pool: the L1 data fee and the operator fee for the whole
	// gas limit, at the pending block's L1Block values.
	if c := p.rollupCost(head, st, tx); c != nil {
		cost.Add(cost, c.ToBig())
	}
	bal := balance.ToBig()
	if bal.Cmp(cost) < 0 {
		return Result{}, fmt.Errorf("%w: balance %v, tx cost %v, overshot %v", core.ErrInsufficientFunds, bal, cost, new(big.Int).Sub(cost, bal))
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	hash := tx.Hash()
	if _, ok := p.all[hash]; ok {
		return Result{}, txpool.ErrAlreadyKnown
	}
	acct := p.accounts[from]
	var old *Entry
	if acct != nil {
		old = acct.txs[tx.Nonce()]
		// Pooled transactions below the pending nonce were executed (or
		// replaced by executed ones); they no longer count.
		p.pruneLocked(from, acct, nonce)
		if old != nil && old.Tx.Nonce() < nonce {
			old = nil
		}
		acct = p.accounts[from] // pruning may have emptied and dropped it
	}
	spent := new(big.Int)
	if acct != nil {
		spent.Set(acct.spent)
	}
	if old != nil {
		if !bumped(old.Tx, tx, p.cfg.PriceBump) {
			return Result{}, txpool.ErrReplaceUnderpriced
		}
		bump := new(big.Int).Sub(cost, old.Cost)
		need := new(big.Int).Add(spent, bump)
		if bal.Cmp(need) < 0 {
			return Result{}, fmt.Errorf("%w: balance %v, queued cost %v, tx bumped %v, overshot %v", core.ErrInsufficientFunds, bal, spent, bump, new(big.Int).Sub(need, bal))
		}
	} else {
		need := new(big.Int).Add(spent, cost)
		if bal.Cmp(need) < 0 {
			return Result{}, fmt.Errorf("%w: balance %v, queued cost %v, tx cost %v, overshot %v", core.ErrInsufficientFunds, bal, spent, cost, new(big.Int).Sub(need, bal))
		}
		if acct != nil && len(acct.txs) >= p.cfg.AccountSlots {
			return Result{}, fmt.Errorf("%w: pooled %d txs", txpool.ErrAccountLimitExceeded, len(acct.txs))
		}
		if len(p.all) >= p.cfg.GlobalSlots {
			return Result{}, ErrTxPoolOverflow
		}
	}
	if acct == nil {
		acct = &account{txs: make(map[uint64]*Entry), spent: new(big.Int)}
		p.accounts[from] = acct
	}
	res := Result{From: from}
	if old != nil {
		delete(p.all, old.Tx.Hash())
		acct.spent.Sub(acct.spent, old.Cost)
		res.Replaced = old.Tx
	}
	p.seq++
	e := &Entry{Tx: tx, From: from, Seq: p.seq, Cost: cost}
	res.Tx = tx
	acct.txs[tx.Nonce()] = e
	acct.spent.Add(acct.spent, cost)
	p.all[hash] = e
	// The walk starts past what the sender already has executable, which
	// the pending state read above may not show yet (executed since).
	res.NextNonce = p.PendingNonce(from, nonce)
	for {
		if _, ok := acct.txs[res.NextNonce]; !ok {
			break
		}
		res.NextNonce++
	}
	res.Queued = tx.Nonce() > res.NextNonce
	p.nonces.raise(from, res.NextNonce)
	return res, nil
}

// bumped reports whether repl pays at least bump percent more than old in
// both the fee cap and the tip, as go-ethereum requires for a replacement.
func bumped(old, repl *types.Transaction, bump uint64) bool {
	threshold := func(v *big.Int) *big.Int {
		t := new(big.Int).Mul(v, big.NewInt(int64(100+bump)))
		return t.Div(t, big.NewInt(100))
	}
	if repl.GasFeeCapIntCmp(old.GasFeeCap()) <= 0 || repl.GasTipCapIntCmp(old.GasTipCap()) <= 0 {
		return false
	}
	return repl.GasFeeCapIntCmp(threshold(old.GasFeeCap())) >= 0 && repl.GasTipCapIntCmp(threshold(old.GasTipCap())) >= 0
}

// pruneLocked drops the sender's transactions below nonce.
func (p *Pool) pruneLocked(from common.Address, acct *account, nonce uint64) {
	for n, e := range acct.txs {
		if n < nonce {
			p.removeLocked(from, acct, e)
		}
	}
}

func (p *Pool) removeLocked(from common.Address, acct *account, e *Entry) {
	delete(acct.txs, e.Tx.Nonce())
	delete(p.all, e.Tx.Hash())
	acct.spent.Sub(acct.spent, e.Cost)
	if len(acct.txs) == 0 {
		delete(p.accounts, from)
	}
}

// Get returns a pooled transaction.
func (p *Pool) Get(hash common.Hash) *Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.all[hash]
}

// Has reports whether hash is pooled.
func (p *Pool) Has(hash common.Hash) bool { return p.Get(hash) != nil }

// Len is the number of pooled transactions.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.all)
}

// Candidates returns, per sender, the pooled transactions that are
// executable on top of nonceOf (contiguous nonces from the sender's current
// one), in nonce order. Stale transactions (nonce below nonceOf) are dropped.
func (p *Pool) Candidates(nonceOf func(common.Address) uint64) [][]*Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([][]*Entry, 0, len(p.accounts))
	for from, acct := range p.accounts {
		n := nonceOf(from)
		p.pruneLocked(from, acct, n)
		var run []*Entry
		for {
			e, ok := acct.txs[n]
			if !ok {
				break
			}
			run = append(run, e)
			n++
		}
		if len(run) > 0 {
			out = append(out, run)
		}
	}
	return out
}

// Remove takes executed transactions (or ones whose nonce was executed) out
// of the pool: their senders' pool nonces stay where they are.
func (p *Pool) Remove(hashes ...common.Hash) { p.remove(false, hashes) }

// Drop takes transactions that will not be executed out of the pool
// (invalid, or not made durable): each one's nonce is its sender's next
// again, and the sender's later transactions wait for it (queued).
func (p *Pool) Drop(hashes ...common.Hash) { p.remove(true, hashes) }

func (p *Pool) remove(lower bool, hashes []common.Hash) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range hashes {
		e := p.all[h]
		if e == nil {
			continue
		}
		if acct := p.accounts[e.From]; acct != nil {
			p.removeLocked(e.From, acct, e)
		}
		if lower {
			p.nonces.lower(e.From, e.Tx.Nonce())
		}
	}
}

// Content splits the pool into executable ("pending") and gapped ("queued")
// transactions per sender, each sorted by nonce, given the senders' nonces.
func (p *Pool) Content(nonceOf func(common.Address) uint64) (pending, queued map[common.Address][]*Entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pending = make(map[common.Address][]*Entry)
	queued = make(map[common.Address][]*Entry)
	for from, acct := range p.accounts {
		nonces := make([]uint64, 0, len(acct.txs))
		for n := range acct.txs {
			nonces = append(nonces, n)
		}
		slices.Sort(nonces)
		next := nonceOf(from)
		for _, n := range nonces {
			e := acct.txs[n]
			switch {
			case n < next:
				continue // executed, about to be pruned
			case n == next:
				pending[from] = append(pending[from], e)
				next++
			default:
				queued[from] = append(queued[from], e)
			}
		}
	}
	return pending, queued
}

// All returns every pooled transaction in arrival order (for the journal).
func (p *Pool) All() []*Entry {
	p.mu.Lock()
	out := make([]*Entry, 0, len(p.all))
	for _, e := range p.all {
		out = append(out, e)
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b *Entry) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return out
}

// blobSidecar converts a version-0 blob sidecar (one KZG proof per blob) to
// version 1 (cell proofs) once Osaka is active at head, as go-ethereum's
// eth_sendRawTransaction does; validation then checks the version the fork
// wants.
func (p *Pool) blobSidecar(tx *types.Transaction, head *types.Header) (*types.Transaction, error) {
	sc := tx.BlobTxSidecar()
	if sc.Version != types.BlobSidecarVersion0 || !p.chain.IsOsaka(head.Number, head.Time) || p.chain.IsOptimism() {
		return tx, nil
	}
	sc = sc.Copy()
	if err := sc.ToV1(); err != nil {
		return nil, fmt.Errorf("blob sidecar conversion failed: %v", err)
	}
	return tx.WithBlobTxSidecar(sc), nil
}

// stateGetter reads the pending state's storage for op-geth's fee functions
// (a failed read is zero, as a missing slot).
type stateGetter struct{ r state.Reader }

func (g stateGetter) GetState(addr common.Address, slot common.Hash) common.Hash {
	v, _ := g.r.Storage(addr, slot)
	return v
}

// Clear empties the pool and forgets every pool nonce: the chain and
// pending state it was validated against are gone (evm_revert,
// anvil_reset), and the caller adds back what belongs to the new one.
func (p *Pool) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all = make(map[common.Hash]*Entry)
	p.accounts = make(map[common.Address]*account)
	p.nonces.clear()
}
