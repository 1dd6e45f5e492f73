package api

import (
	"math/big"
	"slices"

	"github.com/ethereum/go-ethereum/params"
)

// opMinTip is op-geth's minimum tip suggestion on OP-stack chains
// (--gpo.minsuggestedpriorityfee, 0.001 gwei).
var opMinTip = big.NewInt(1e6 * params.Wei)

// suggestOPTip is op-geth's tip suggestion on OP-stack chains, where one
// known builder includes every transaction that fits: the minimum, unless
// the head block was at capacity (its gas used plus its largest
// transaction's gas used would pass the gas limit); then 10% over the
// median effective tip of its transactions (deposits included) if that is
// higher; never above 500 gwei.
func (a *API) suggestOPTip() *big.Int {
	head := a.chain.Head()
	hash := head.Hash()
	c := &a.cache
	c.tipMu.Lock()
	defer c.tipMu.Unlock()
	if c.tipHead == hash && c.tipPrice != nil {
		return new(big.Int).Set(c.tipPrice)
	}
	price := new(big.Int).Set(opMinTip)
	var maxGas uint64
	if b := a.chain.BlockByHash(hash); b != nil {
		for _, r := range a.chain.Receipts(b) {
			maxGas = max(maxGas, r.GasUsed)
		}
		if maxGas <= head.GasLimit && head.GasUsed+maxGas > head.GasLimit && len(b.Transactions()) > 0 {
			tips := make([]*big.Int, len(b.Transactions()))
			for i, tx := range b.Transactions() {
				tips[i], _ = tx.EffectiveGasTip(b.BaseFee())
			}
			slices.SortFunc(tips, func(x, y *big.Int) int { return x.Cmp(y) })
			median := tips[len(tips)/2]
			if s := new(big.Int).Add(median, new(big.Int).Div(median, big.NewInt(10))); s.Cmp(price) > 0 {
				price = s
			}
		}
	}
	if price.Cmp(tipMaxPrice) > 0 {
		price.Set(tipMaxPrice)
	}
	c.tipHead, c.tipPrice = hash, price
	return new(big.Int).Set(price)
}
