package simulate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/consensus/misc/eip1559"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
)

// BlockCalls is one entry of blockStateCalls.
type BlockCalls struct {
	BlockOverrides *BlockOverrides `json:"blockOverrides"`
	StateOverrides StateOverride   `json:"stateOverrides"`
	Calls          []CallArgs      `json:"calls"`
}

// Request is eth_simulateV1's first parameter.
type Request struct {
	BlockStateCalls        []BlockCalls `json:"blockStateCalls"`
	TraceTransfers         bool         `json:"traceTransfers"`
	Validation             bool         `json:"validation"`
	ReturnFullTransactions bool         `json:"returnFullTransactions"`
}

// CheckLimits rejects requests over the block and call limits before any
// state is opened.
func (r *Request) CheckLimits() error {
	if len(r.BlockStateCalls) == 0 {
		return &Error{Code: CodeInvalidParams, Msg: "empty input"}
	}
	if len(r.BlockStateCalls) > MaxBlocks {
		return limitError("too many blocks")
	}
	total := 0
	for _, b := range r.BlockStateCalls {
		if len(b.Calls) > MaxCallsPerBlock {
			return limitError("too many calls in block: %d > %d", len(b.Calls), MaxCallsPerBlock)
		}
		total += len(b.Calls)
		if total > MaxCalls {
			return limitError("too many calls: %d > %d", total, MaxCalls)
		}
	}
	return nil
}

// CallError is a failed call's error member.
type CallError struct {
	Code    int
	Message string
	Data    string // hex revert data; "" for none
}

// CallResult is one call's outcome.
type CallResult struct {
	ReturnData []byte
	Logs       []*types.Log // stamped with the final block hash
	GasUsed    uint64
	MaxUsedGas uint64
	Status     uint64
	Error      *CallError
}

// BlockResult is one simulated block: its header and body, without a
// types.Block (which would copy the header).
type BlockResult struct {
	TxHashes    []common.Hash     // the transactions' hashes
	Withdrawals types.Withdrawals // nil before Shanghai
	Calls       []CallResult
	Senders     []common.Address // by transaction index
	// Hash and Size are the block's hash and RLP size (derived from one
	// encoding of the header: blockenc.go).
	Hash   common.Hash
	Size   uint64
	header *types.Header // the block's header (shared, read-only)
	// txs are the block's transactions, built from calls (as executed) on
	// first use: the zero-root mode encodes them without types.Transaction.
	txs   types.Transactions
	calls []CallArgs
}

// Header is the block's header, shared: read it, never change it.
func (r *BlockResult) Header() *types.Header { return r.header }

// Block is the result as a types.Block (built on each call: for callers that
// need one, such as tests).
func (r *BlockResult) Block() *types.Block {
	return types.NewBlockWithHeader(r.header).WithBody(types.Body{Transactions: r.Transactions(), Withdrawals: r.Withdrawals})
}

// Transactions are the block's transactions (built on the first call in
// the zero-root mode; not safe for concurrent first calls).
func (r *BlockResult) Transactions() types.Transactions {
	if r.txs == nil && len(r.calls) > 0 {
		r.txs = make(types.Transactions, len(r.calls))
		for i := range r.calls {
			r.txs[i] = r.calls[i].transaction(types.DynamicFeeTxType)
		}
	}
	return r.txs
}

// Base is what a simulation starts from.
type Base struct {
	// Parent is the last block before the simulated ones.
	Parent *types.Header
	// State is the prestate (changed by the simulation: pass your own).
	State *state.StateDB
	// Pending, when set, is the environment of the pre-confirmed block
	// (number Parent+1): a simulated block at that number takes its
	// timestamp, base fee, fee recipient, gas limit, prevRandao, beacon root
	// and excess blob gas unless overridden, its gas pool is what the
	// pre-confirmed transactions left, and State already holds their effects
	// (so the block's system calls are not repeated).
	Pending *types.Header
	// BlockTime is the timestamp step between simulated blocks (0: 12 s).
	BlockTime uint64
	// Prestate, when set, reads exactly the state State starts from (its
	// own reader, when no changes were written into it before): the engine
	// may then read contracts nothing in the request touched from it
	// without loading them into State.
	Prestate state.Reader
}

// emptyRequestsHash is the EIP-7685 hash of no requests (most blocks'),
// which CalcRequestsHash would compute with two SHA-256 states each time.
var emptyRequestsHash = types.CalcRequestsHash(nil)

type simulator struct {
	dl *deadline
	// evmSystemCalls runs the system contracts even where their effects
	// could be written directly (tests compare the two).
	evmSystemCalls bool
	e              *Engine
	base           Base
	step           uint64
	budget         uint64
	transfers      bool
	validate       bool
	fullTx         bool
	// queueTouched: the withdrawal / consolidation queue contract may differ
	// from the prestate (entered by a call, overridden, or written).
	queueTouched [2]bool
	// passerTouched: the L2ToL1MessagePasser's storage may differ from the
	// prestate (OP-stack withdrawals root, see withdrawalsRoot).
	passerTouched bool
	// sys holds the beacon-roots and history writes in zero-root mode
	// (sysdefer.go).
	sys deferredWrites
	// tracer, hooked and warm wrap base.State for execution; made for the
	// first block and reused by the next ones of the request.
	tracer *logTracer
	hooked vm.StateDB
	warm   *warmPrecompiles
	// enc encodes each block's transactions and receipts in the zero-root
	// mode (txenc.go); nil in the compute mode, which builds types.Block.
	enc *blockEncoder
}

// execState is the tracer and the wrapped StateDB for executing a block.
func (s *simulator) execState(number, time uint64) (*logTracer, vm.StateDB, *warmPrecompiles) {
	if s.tracer == nil {
		s.tracer = newLogTracer(s.transfers, number, time, s)
		s.hooked = state.NewHookedState(s.base.State, s.tracer.hooks)
		s.warm = &warmPrecompiles{StateDB: s.hooked}
	} else {
		s.tracer.startBlock(number, time)
	}
	return s.tracer, s.hooked, s.warm
}

// Simulate runs the blocks of req on base.State.
func (e *Engine) Simulate(ctx context.Context, req *Request, base Base) ([]*BlockResult, error) {
	if err := req.CheckLimits(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dl := e.watch(ctx)
	defer dl.stop()
	s := &simulator{dl: dl, e: e, base: base, step: base.BlockTime, budget: e.opts.gasCap(),
		transfers: req.TraceTransfers, validate: req.Validation, fullTx: req.ReturnFullTransactions, evmSystemCalls: e.opts.EVMSystemCalls,
		sys: newDeferredWrites(e.opts.Roots == RootZero)}
	if s.step == 0 {
		s.step = DefaultBlockTime
	}
	if e.opts.Roots != RootCompute {
		s.enc = blockEncoders.Get().(*blockEncoder)
		defer blockEncoders.Put(s.enc)
	}
	if s.budget == 0 {
		s.budget = math.MaxUint64
	}
	blocks, err := s.sanitize(req.BlockStateCalls)
	if err != nil {
		return nil, err
	}
	headers := s.headers(blocks)
	out := make([]*BlockResult, len(blocks))
	parent, parentHash := base.Parent, e.hashOf(base.Parent)
	for i := range blocks {
		res, err := s.block(ctx, &blocks[i], headers[i], parent, parentHash, headers[:i])
		if err != nil {
			return nil, err
		}
		headers[i] = res.header
		out[i] = res
		parent, parentHash = headers[i], res.Hash
	}
	return out, nil
}

func (s *simulator) isPending(n *big.Int) bool {
	return s.base.Pending != nil && s.base.Pending.Number.Cmp(n) == 0
}

// defaultTime is the timestamp of block n when not overridden.
func (s *simulator) defaultTime(n *big.Int, prev uint64) uint64 {
	if s.isPending(n) && s.base.Pending.Time > prev {
		return s.base.Pending.Time
	}
	return prev + s.step
}

// sanitize checks that numbers and timestamps strictly increase, fills
// defaults (number +1, time + step), and inserts empty blocks for gaps in
// the numbering.
func (s *simulator) sanitize(in []BlockCalls) ([]BlockCalls, error) {
	var (
		out      = make([]BlockCalls, 0, len(in))
		baseNum  = s.base.Parent.Number.Uint64()
		prevNum  = baseNum // numbers as uint64: one past base+MaxBlocks is refused
		prevTime = s.base.Parent.Time
	)
	for _, b := range in {
		bo := new(BlockOverrides)
		if b.BlockOverrides != nil {
			*bo = *b.BlockOverrides
		}
		b.BlockOverrides = bo
		if bo.Number == nil {
			bo.Number = (*hexutil.Big)(new(big.Int).SetUint64(prevNum + 1))
		}
		if bo.Withdrawals == nil {
			bo.Withdrawals = &types.Withdrawals{}
		}
		num := bo.Number.ToInt()
		if num.Sign() < 0 || (num.IsUint64() && num.Uint64() <= prevNum) {
			return nil, &Error{Code: CodeBlockNumberInvalid, Msg: fmt.Sprintf("block numbers must be in order: %d <= %d", num.Uint64(), prevNum)}
		}
		if !num.IsUint64() || num.Uint64()-baseNum > MaxBlocks {
			return nil, limitError("too many blocks")
		}
		for n := prevNum + 1; n < num.Uint64(); n++ {
			number := new(big.Int).SetUint64(n)
			t := s.defaultTime(number, prevTime)
			out = append(out, BlockCalls{BlockOverrides: &BlockOverrides{
				Number: (*hexutil.Big)(number), Time: (*hexutil.Uint64)(&t), Withdrawals: &types.Withdrawals{},
			}})
			prevTime = t
		}
		prevNum = num.Uint64()
		var t uint64
		if bo.Time == nil {
			t = s.defaultTime(num, prevTime)
			bo.Time = (*hexutil.Uint64)(&t)
		} else if t = uint64(*bo.Time); t <= prevTime {
			return nil, &Error{Code: CodeBlockTimeInvalid, Msg: fmt.Sprintf("block timestamps must be in order: %d <= %d", t, prevTime)}
		}
		prevTime = t
		out = append(out, b)
	}
	return out, nil
}

// headers builds each block's preliminary header: fee recipient and gas
// limit carry over from the block before, post-merge difficulty is zero, and
// the overrides apply on top. Parent hash, base fee, blob gas and roots are
// filled while executing.
func (s *simulator) headers(blocks []BlockCalls) []*types.Header {
	cfg := s.e.config
	out := make([]*types.Header, len(blocks))
	prev := s.base.Parent
	for i := range blocks {
		bo := blocks[i].BlockOverrides
		num := bo.Number.ToInt()
		t := uint64(*bo.Time)
		// the header and the values it points to in one allocation
		own := new(struct {
			h          types.Header
			difficulty big.Int
			beaconRoot common.Hash
			excess     uint64
		})
		h := &own.h
		*h = types.Header{
			UncleHash:   types.EmptyUncleHash,
			ReceiptHash: types.EmptyReceiptsHash,
			TxHash:      types.EmptyTxsHash,
			Coinbase:    prev.Coinbase,
			Difficulty:  prev.Difficulty,
			GasLimit:    prev.GasLimit,
		}
		if cfg.IsShanghai(num, t) {
			h.WithdrawalsHash = &types.EmptyWithdrawalsHash
		}
		if cfg.IsCancun(num, t) {
			h.ParentBeaconRoot = &own.beaconRoot
		}
		if s.isPending(num) {
			p := s.base.Pending
			h.Coinbase, h.GasLimit, h.MixDigest = p.Coinbase, p.GasLimit, p.MixDigest
			if p.BaseFee != nil {
				h.BaseFee = new(big.Int).Set(p.BaseFee)
			}
			if h.ParentBeaconRoot != nil && p.ParentBeaconRoot != nil {
				own.beaconRoot = *p.ParentBeaconRoot
			}
			if p.ExcessBlobGas != nil && cfg.IsCancun(num, t) {
				own.excess = *p.ExcessBlobGas
				h.ExcessBlobGas = &own.excess
			}
		}
		if bo.BeaconRoot != nil && h.ParentBeaconRoot != nil {
			own.beaconRoot = *bo.BeaconRoot
		}
		if cfg.IsPostMerge(num.Uint64(), t) {
			h.Difficulty = &own.difficulty
		}
		bo.applyHeader(h)
		out[i] = h
		prev = h
	}
	return out
}

func (s *simulator) block(ctx context.Context, b *BlockCalls, header, parent *types.Header, parentHash common.Hash, done []*types.Header) (*BlockResult, error) {
	cfg := s.e.config
	pending := s.isPending(header.Number)
	// the block's own objects, and the values its header points to, in
	// one allocation
	own := new(struct {
		res             BlockResult
		body            types.Body
		chain           simChain
		baseFee         big.Int
		excess, blobGas uint64
		requestsHash    common.Hash
	})
	header.ParentHash = parentHash
	if cfg.IsLondon(header.Number) && header.BaseFee == nil {
		if s.validate {
			header.BaseFee = eip1559.CalcBaseFee(cfg, parent, header.Time)
		} else {
			header.BaseFee = &own.baseFee
		}
	}
	if cfg.IsCancun(header.Number, header.Time) && header.ExcessBlobGas == nil {
		if cfg.IsCancun(parent.Number, parent.Time) {
			own.excess = eip4844.CalcExcessBlobGas(cfg, parent, header.Time)
		}
		header.ExcessBlobGas = &own.excess
	}
	chain := &own.chain
	*chain = simChain{ChainContext: s.e.chain, base: s.base.Parent, headers: done}
	blockCtx := core.NewEVMBlockContext(header, chain, nil, cfg, s.base.State)
	if b.BlockOverrides.BlobBaseFee != nil {
		blockCtx.BlobBaseFee = new(big.Int).Set(b.BlockOverrides.BlobBaseFee.ToInt())
	}
	precompiles := s.e.precompilesFor(header.Number, header.Difficulty.Sign() == 0, header.Time, b.StateOverrides)
	db := s.base.State
	s.sys.overrides(db, b.StateOverrides)
	if err := b.StateOverrides.Apply(db, precompiles); err != nil {
		return nil, err
	}
	for addr := range b.StateOverrides {
		s.touch(addr)
	}
	poolGas := blockCtx.GasLimit
	if pending && s.base.Pending.GasUsed < poolGas {
		poolGas -= s.base.Pending.GasUsed
	} else if pending {
		poolGas = 0
	}
	var (
		gp       = core.NewGasPool(poolGas)
		n        = len(b.Calls)
		enc      = s.enc
		txs      types.Transactions // compute mode: the block's
		receipts types.Receipts
		res      = &own.res
		blobGas  = &own.blobGas
		allLogs  []*types.Log
	)
	if enc != nil {
		enc.reset()
	} else {
		txs, receipts = make(types.Transactions, n), make(types.Receipts, n)
	}
	res.Calls, res.Senders, res.TxHashes = make([]CallResult, n), make([]common.Address, n), make([]common.Hash, n)
	// From Jovian, an OP-stack header's blobGasUsed is the block's
	// data-availability footprint: each transaction's estimated compressed
	// size times the scalar the L1-attributes deposit set in L1Block.
	da := newDAFootprint(cfg, header.Time, db)
	tracer, hooked, warm := s.execState(header.Number.Uint64(), header.Time)
	evm := newEVM(blockCtx, warm, cfg, vm.Config{NoBaseFee: !s.validate, Tracer: tracer.hooks})
	evm.SetPrecompiles(precompiles)
	if !pending {
		s.preExecution(db, header, parentHash, evm, precompiles)
	}
	// The request's deadline stops the call running, and the next one is
	// not started.
	s.dl.attach(evm)
	for i := range b.Calls {
		if s.dl.expired() {
			return nil, timeoutError(s.e.opts.timeout())
		}
		call := &b.Calls[i]
		capped, err := s.prepare(call, db, header, gp)
		if err != nil {
			return nil, err
		}
		var (
			tx   *types.Transaction
			hash common.Hash
			typ  byte
		)
		if enc != nil {
			if hash, typ, err = enc.addTx(call); err != nil {
				return nil, &Error{Code: CodeInvalidParams, Msg: err.Error()}
			}
			da.add(enc.lastTx())
		} else {
			tx = call.transaction(types.DynamicFeeTxType)
			hash = tx.Hash()
			txs[i] = tx
			da.addTx(tx)
		}
		res.TxHashes[i] = hash
		res.Senders[i] = call.sender()
		tracer.startTx(hash, i)
		s.sys.beforeTx(db, res.Senders[i])
		db.SetTxContext(hash, i)
		msg := call.message(header.BaseFee, !s.validate)
		result, err := s.e.run(evm, msg, gp)
		if err != nil {
			return nil, txError(err)
		}
		s.sys.endTx()
		var root []byte
		if cfg.IsByzantium(header.Number) {
			hooked.Finalise(true)
		} else {
			root = db.IntermediateRoot(cfg.IsEIP158(header.Number)).Bytes()
		}
		if enc != nil {
			logs := db.GetLogs(hash, header.Number.Uint64(), common.Hash{}, header.Time)
			*blobGas += enc.addReceipt(typ, call, root, result.Failed(), gp.CumulativeUsed(), logs)
		} else {
			receipts[i] = core.MakeReceipt(evm, result, db, header.Number, common.Hash{}, header.Time, tx, gp.CumulativeUsed(), root, cfg, tx.Nonce())
			*blobGas += receipts[i].BlobGasUsed
		}
		if result.UsedGas > s.budget {
			return nil, &Error{Code: CodeServer, Msg: fmt.Sprintf("RPC gas cap exhausted: need %d, remaining %d", result.UsedGas, s.budget)}
		}
		s.budget -= result.UsedGas
		cr := CallResult{ReturnData: result.Return(), Logs: tracer.logs(), GasUsed: result.UsedGas, MaxUsedGas: result.MaxUsedGas}
		if result.Failed() {
			cr.Status = types.ReceiptStatusFailed
			if errors.Is(result.Err, vm.ErrExecutionReverted) {
				rev := NewRevertError(result.Revert())
				cr.Error = &CallError{Code: CodeReverted, Message: rev.Error(), Data: rev.DataHex()}
			} else {
				msg := result.Err.Error()
				if capped {
					msg += " (gas limit was capped by the RPC server's global gas cap)"
				}
				cr.Error = &CallError{Code: CodeVMError, Message: msg}
			}
		} else {
			cr.Status = types.ReceiptStatusSuccessful
			allLogs = append(allLogs, cr.Logs...)
		}
		res.Calls[i] = cr
	}
	if !s.dl.detach() {
		// the request ended after the last call (the EVM is being
		// cancelled): the system calls below must not run in it.
		return nil, timeoutError(s.e.opts.timeout())
	}
	header.GasUsed = gp.Used()
	if cfg.IsCancun(header.Number, header.Time) {
		header.BlobGasUsed = blobGas
		if da != nil {
			*blobGas = da.total
		}
	}
	requests, err := s.postExecution(db, header, allLogs, evm, precompiles)
	if err != nil {
		return nil, err
	}
	if requests != nil {
		own.requestsHash = emptyRequestsHash
		if len(requests) > 0 {
			own.requestsHash = types.CalcRequestsHash(requests)
		}
		header.RequestsHash = &own.requestsHash
	}
	body := &own.body
	body.Transactions = txs
	if cfg.IsShanghai(header.Number, header.Time) {
		body.Withdrawals = *b.BlockOverrides.Withdrawals
	}
	res.calls = b.Calls
	if enc == nil {
		block, err := da.assemble(ctx, s.e.chain.Engine(), chain, header, db, body, receipts)
		if err != nil {
			return nil, err
		}
		res.header, res.txs, res.Withdrawals = block.Header(), block.Transactions(), block.Withdrawals()
		payload, sized := txsPayload(res.txs)
		res.Hash, res.Size = hashAndSize(res.header, res.Withdrawals, payload, sized, res.Transactions)
	} else {
		s.e.chain.Engine().Finalize(chain, header, db, body)
		header.Root = common.Hash{}
		if cfg.IsOptimismIsthmus(header.Time) {
			header.WithdrawalsHash = s.withdrawalsRoot(db)
		}
		lh := listHashers.Get().(*listHasher)
		res.Withdrawals, err = zeroRootBlock(header, enc, body.Withdrawals, cfg, lh)
		listHashers.Put(lh)
		if err != nil {
			return nil, err
		}
		res.header = header
		res.Hash, res.Size = hashAndSize(header, res.Withdrawals, enc.payload, enc.sized, res.Transactions)
		if s.fullTx {
			res.Transactions() // built before the answer is written
		}
	}
	hash := res.Hash
	for i := range res.Calls {
		for _, l := range res.Calls[i].Logs {
			l.BlockHash = hash
		}
	}
	return res, nil
}

// prepare fills a call's defaults inside a block: the sender's nonce, the
// block's remaining gas, clamped to the request's remaining gas budget
// (capped reports that clamp), and zero fees.
func (s *simulator) prepare(call *CallArgs, db *state.StateDB, header *types.Header, gp *core.GasPool) (capped bool, err error) {
	if call.Nonce == nil {
		n := hexutil.Uint64(db.GetNonce(call.sender()))
		call.Nonce = &n
	}
	remaining := gp.Gas()
	if call.Gas == nil {
		g := hexutil.Uint64(remaining)
		call.Gas = &g
	}
	if remaining < uint64(*call.Gas) {
		return false, &Error{Code: CodeBlockGasLimit, Msg: fmt.Sprintf("block gas limit reached: remaining: %d, required: %d", remaining, uint64(*call.Gas))}
	}
	if g := uint64(*call.Gas); g > s.budget {
		capped = true
		b := hexutil.Uint64(s.budget)
		call.Gas = &b
	}
	return capped, call.callDefaults(0, header.BaseFee, s.e.config.ChainID)
}
