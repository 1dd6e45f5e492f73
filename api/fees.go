package api

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/consensus/misc/eip1559"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
)

// Tip oracle settings: go-ethereum's full-node defaults (eth/ethconfig).
const (
	tipCheckBlocks   = 20 // blocks sampled
	tipPercentile    = 60 // percentile of the samples suggested
	tipSamplesPerBlk = 3  // cheapest transactions sampled per block
	maxFeeHistory    = 1024
	maxRewardPoints  = 100
)

var (
	tipMaxPrice    = big.NewInt(500 * params.GWei)
	tipIgnorePrice = big.NewInt(2 * params.Wei)
	// tipStartPrice is the suggestion before any block was sampled (the
	// miner's default minimum tip in go-ethereum).
	tipStartPrice = big.NewInt(params.GWei / 1000)
)

// readCache holds what the read methods memoise: the sender-recovery signer
// and the last tip suggestion (go-ethereum's oracle carries its last price
// over empty blocks, so the suggestion depends on the previous one).
type readCache struct {
	signerOnce sync.Once
	signer     types.Signer

	tipMu    sync.Mutex
	tipHead  common.Hash
	tipPrice *big.Int

	// pending is the view of the last pending snapshot asked about: its
	// block, hash and block objects stay valid for that snapshot (they are
	// immutable), and every read of the pending block until the next one
	// shares them.
	pending atomic.Pointer[blockView]
}

// pendingBlockHash is the pending block's hash so far (its header's hash),
// computed once per snapshot.
func (a *API) pendingBlockHash(snap *pending.Snapshot) common.Hash {
	return a.pendingView(snap).hash
}

// suggestTip is go-ethereum's gas price oracle (op-geth's on OP-stack
// chains: suggestOPTip): the 60th percentile of the
// three cheapest effective tips (at least 2 wei, not paid by the block's
// own fee recipient) of each of the last 20 blocks, capped at 500 gwei.
func (a *API) suggestTip() *big.Int {
	if a.op {
		return a.suggestOPTip()
	}
	head := a.chain.Head()
	hash := head.Hash()
	c := &a.cache
	c.tipMu.Lock()
	defer c.tipMu.Unlock()
	last := c.tipPrice
	if last == nil {
		last = tipStartPrice
	}
	if c.tipHead == hash {
		return new(big.Int).Set(last)
	}
	var (
		number  = head.Number.Uint64()
		queued  []uint64
		results []*big.Int
	)
	for len(queued) < tipCheckBlocks && number > 0 {
		queued = append(queued, number)
		number--
	}
	for len(queued) > 0 {
		n := queued[0]
		queued = queued[1:]
		values := a.blockTips(n)
		if len(values) == 0 {
			values = []*big.Int{last}
		}
		// Too little data: sample further back, up to twice the blocks.
		if len(values) == 1 && len(results)+1+len(queued) < tipCheckBlocks*2 && number > 0 {
			queued = append(queued, number)
			number--
		}
		results = append(results, values...)
	}
	price := last
	if len(results) > 0 {
		slices.SortFunc(results, func(x, y *big.Int) int { return x.Cmp(y) })
		price = results[(len(results)-1)*tipPercentile/100]
	}
	if price.Cmp(tipMaxPrice) > 0 {
		price = new(big.Int).Set(tipMaxPrice)
	}
	c.tipHead, c.tipPrice = hash, price
	return new(big.Int).Set(price)
}

// blockTips samples the cheapest effective tips of block n.
func (a *API) blockTips(n uint64) []*big.Int {
	b := a.chain.BlockByNumber(n)
	if b == nil {
		return nil
	}
	baseFee := b.BaseFee()
	type txTip struct {
		tx   *types.Transaction
		sort *big.Int
	}
	txs := make([]txTip, len(b.Transactions()))
	for i, tx := range b.Transactions() {
		txs[i] = txTip{tx, tx.EffectiveGasTipValue(baseFee)}
	}
	slices.SortStableFunc(txs, func(x, y txTip) int { return x.sort.Cmp(y.sort) })
	signer := a.signer()
	var prices []*big.Int
	for _, t := range txs {
		tip, _ := t.tx.EffectiveGasTip(baseFee)
		if tip == nil || tip.Cmp(tipIgnorePrice) < 0 {
			continue
		}
		if sender, err := types.Sender(signer, t.tx); err == nil && sender != b.Coinbase() {
			prices = append(prices, tip)
			if len(prices) >= tipSamplesPerBlk {
				break
			}
		}
	}
	return prices
}

func (a *API) gasPrice(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(0); err != nil {
		return nil, err
	}
	return (*hexutil.Big)(a.GasPrice()), nil
}

// GasPrice is eth_gasPrice's answer: the suggested tip plus the head's
// base fee.
func (a *API) GasPrice() *big.Int {
	tip := a.suggestTip()
	if head := a.chain.Head(); head.BaseFee != nil {
		tip.Add(tip, head.BaseFee)
	}
	return tip
}

func (a *API) maxPriorityFeePerGas(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(0); err != nil {
		return nil, err
	}
	return (*hexutil.Big)(a.suggestTip()), nil
}

// blobBaseFee is the blob base fee at the head (null before Cancun).
func (a *API) blobBaseFee(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(0); err != nil {
		return nil, err
	}
	head := a.chain.Head()
	if head.ExcessBlobGas == nil {
		return nil, nil
	}
	return (*hexutil.Big)(eip4844.CalcBlobFee(a.chain.Config(), head)), nil
}

// baseFee is the base fee of the next block (null before London).
func (a *API) baseFee(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(0); err != nil {
		return nil, err
	}
	head := a.chain.Head()
	cfg := a.chain.Config()
	if !cfg.IsLondon(new(big.Int).Add(head.Number, common.Big1)) {
		return nil, nil
	}
	return (*hexutil.Big)(eip1559.CalcBaseFee(cfg, head, head.Time+1)), nil
}

type feeHistoryResult struct {
	OldestBlock      *hexutil.Big     `json:"oldestBlock"`
	Reward           [][]*hexutil.Big `json:"reward,omitempty"`
	BaseFee          []*hexutil.Big   `json:"baseFeePerGas,omitempty"`
	GasUsedRatio     []float64        `json:"gasUsedRatio"`
	BlobBaseFee      []*hexutil.Big   `json:"baseFeePerBlobGas,omitempty"`
	BlobGasUsedRatio []float64        `json:"blobGasUsedRatio,omitempty"`
}

// blockFees is one block's row of a fee history.
type blockFees struct {
	reward                       []*hexutil.Big
	baseFee, nextBaseFee         *big.Int
	gasUsedRatio, blobUsedRatio  float64
	blobBaseFee, nextBlobBaseFee *big.Int
}

func errInvalidPercentile(format string, args ...any) error {
	return &rpc.ServerError{Msg: "invalid reward percentile: " + fmt.Sprintf(format, args...)}
}

// feeHistory follows go-ethereum's eth_feeHistory: up to 1024 blocks ending
// at lastBlock, with the next block's base fees appended and, when reward
// percentiles are asked, each block's gas-weighted effective tips. The
// pending block (when a snapshot exists) counts as the block after the head.
func (a *API) feeHistory(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(3); err != nil {
		return nil, err
	}
	var count math.HexOrDecimal64
	if err := p.Required(0, &count); err != nil {
		return nil, err
	}
	last, err := numberParam(p, 1)
	if err != nil {
		return nil, err
	}
	var percentiles []float64 // required, but null stands for none
	if err := argument(p, 2, &percentiles); err != nil {
		return nil, err
	}
	empty := &feeHistoryResult{OldestBlock: (*hexutil.Big)(new(big.Int))}
	blocks := uint64(count)
	if blocks < 1 {
		return empty, nil
	}
	if len(percentiles) > maxRewardPoints {
		return nil, errInvalidPercentile("over the query limit %d", maxRewardPoints)
	}
	blocks = min(blocks, maxFeeHistory)
	for i, pc := range percentiles {
		if pc < 0 || pc > 100 {
			return nil, errInvalidPercentile("%f", pc)
		}
		if i > 0 && pc <= percentiles[i-1] {
			return nil, errInvalidPercentile("#%d:%f >= #%d:%f", i-1, percentiles[i-1], i, pc)
		}
	}
	head := a.chain.Head()
	headNum := head.Number.Uint64()
	var (
		pendingBlock *blockView
		lastNum      uint64
	)
	switch last.Tag {
	case ethjson.TagNone:
		if last.Number > headNum {
			return nil, &rpc.ServerError{Msg: fmt.Sprintf("request beyond head block: requested %d, head %d", last.Number, headNum)}
		}
		lastNum = last.Number
	case ethjson.TagPending:
		if snap := a.pendingSnapshot(); snap != nil {
			pendingBlock = a.pendingView(snap)
			lastNum = pendingBlock.block.NumberU64()
		} else {
			lastNum = headNum
		}
	default:
		h, err := a.header(last)
		if err != nil {
			return nil, err
		}
		lastNum = h.Number.Uint64()
	}
	blocks = min(blocks, lastNum+1)
	oldest := lastNum + 1 - blocks

	rows := make([]*blockFees, 0, blocks)
	for n := oldest; n <= lastNum; n++ {
		var (
			header   *types.Header
			block    *types.Block
			receipts types.Receipts
		)
		switch {
		case pendingBlock != nil && n == pendingBlock.block.NumberU64():
			block, receipts = pendingBlock.block, pendingBlock.snap.Receipts
			header = block.Header()
		case len(percentiles) > 0:
			if block = a.chain.BlockByNumber(n); block != nil {
				receipts = a.chain.Receipts(block)
				header = block.Header()
			}
		default:
			header = a.chain.HeaderByNumber(n)
		}
		if header == nil {
			break // missing blocks end the history
		}
		rows = append(rows, a.blockFees(header, block, receipts, percentiles))
	}
	if len(rows) == 0 {
		return empty, nil
	}
	res := &feeHistoryResult{
		OldestBlock:      (*hexutil.Big)(new(big.Int).SetUint64(oldest)),
		BaseFee:          make([]*hexutil.Big, len(rows)+1),
		GasUsedRatio:     make([]float64, len(rows)),
		BlobBaseFee:      make([]*hexutil.Big, len(rows)+1),
		BlobGasUsedRatio: make([]float64, len(rows)),
	}
	if len(percentiles) > 0 {
		res.Reward = make([][]*hexutil.Big, len(rows))
	}
	for i, r := range rows {
		if res.Reward != nil {
			res.Reward[i] = r.reward
		}
		res.BaseFee[i], res.BaseFee[i+1] = (*hexutil.Big)(r.baseFee), (*hexutil.Big)(r.nextBaseFee)
		res.BlobBaseFee[i], res.BlobBaseFee[i+1] = (*hexutil.Big)(r.blobBaseFee), (*hexutil.Big)(r.nextBlobBaseFee)
		res.GasUsedRatio[i], res.BlobGasUsedRatio[i] = r.gasUsedRatio, r.blobUsedRatio
	}
	return res, nil
}

// blockFees computes one row of the fee history.
func (a *API) blockFees(h *types.Header, block *types.Block, receipts types.Receipts, percentiles []float64) *blockFees {
	cfg := a.chain.Config()
	f := &blockFees{baseFee: h.BaseFee, nextBaseFee: new(big.Int), blobBaseFee: new(big.Int), nextBlobBaseFee: new(big.Int)}
	if f.baseFee == nil {
		f.baseFee = new(big.Int)
	}
	if cfg.IsLondon(new(big.Int).Add(h.Number, common.Big1)) {
		f.nextBaseFee = eip1559.CalcBaseFee(cfg, h, h.Time+1)
	}
	if h.ExcessBlobGas != nil {
		f.blobBaseFee = eip4844.CalcBlobFee(cfg, h)
		excess := eip4844.CalcExcessBlobGas(cfg, h, h.Time)
		f.nextBlobBaseFee = eip4844.CalcBlobFee(cfg, &types.Header{Number: h.Number, Time: h.Time, ExcessBlobGas: &excess})
	}
	f.gasUsedRatio = float64(h.GasUsed) / float64(h.GasLimit)
	if h.BlobGasUsed != nil {
		if maxBlobGas := eip4844.MaxBlobGasPerBlock(cfg, h.Time); maxBlobGas != 0 {
			f.blobUsedRatio = float64(*h.BlobGasUsed) / float64(maxBlobGas)
		}
	}
	if len(percentiles) == 0 || block == nil {
		return f
	}
	txs := block.Transactions()
	f.reward = make([]*hexutil.Big, len(percentiles))
	if len(txs) == 0 || len(receipts) != len(txs) {
		for i := range f.reward {
			f.reward[i] = (*hexutil.Big)(new(big.Int))
		}
		return f
	}
	type gasAndReward struct {
		gasUsed uint64
		reward  *big.Int
	}
	sorted := make([]gasAndReward, len(txs))
	for i, tx := range txs {
		tip, _ := tx.EffectiveGasTip(block.BaseFee())
		sorted[i] = gasAndReward{receipts[i].GasUsed, tip}
	}
	slices.SortStableFunc(sorted, func(x, y gasAndReward) int { return x.reward.Cmp(y.reward) })
	idx, sum := 0, sorted[0].gasUsed
	for i, pc := range percentiles {
		threshold := uint64(float64(block.GasUsed()) * pc / 100)
		for sum < threshold && idx < len(txs)-1 {
			idx++
			sum += sorted[idx].gasUsed
		}
		f.reward[i] = (*hexutil.Big)(sorted[idx].reward)
	}
	return f
}
