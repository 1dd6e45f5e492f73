package workload

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/load"
)

// UniswapName is the name of the Uniswap bundle at tag.
func UniswapName(tag string) string {
	return "eth_simulateV1/uniswap v2 approve, swap, add liquidity/" + tag
}

// Uniswap is an eth_simulateV1 bundle of real contracts (harness.Uniswap,
// deployed in the genesis): the trader approves the pair, swaps 1 token A
// for token B through the pair (transfer in, swap out at the constant
// product's price less 0.3 %), and adds 100 of each token as liquidity
// (transfers, mint), in one block at tag. Every call must succeed.
func Uniswap(u *harness.Uniswap, tag string) Workload {
	erc20, pair := u.ABI["ERC20"], u.ABI["UniswapV2Pair"]
	pack := func(a interface {
		Pack(string, ...any) ([]byte, error)
	}, method string, args ...any) string {
		in, err := a.Pack(method, args...)
		if err != nil {
			panic(err) // static arguments
		}
		return hexutil.Encode(in)
	}
	amountIn := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	// out = in·997·R / (R·1000 + in·997), both reserves R.
	inFee := new(big.Int).Mul(amountIn, big.NewInt(997))
	out := new(big.Int).Div(new(big.Int).Mul(inFee, u.Reserve), new(big.Int).Add(new(big.Int).Mul(u.Reserve, big.NewInt(1000)), inFee))
	out0, out1 := big.NewInt(0), out // token A in, token B out
	if u.Token0 == u.TokenB {
		out0, out1 = out, big.NewInt(0)
	}
	liquidity := new(big.Int).Mul(amountIn, big.NewInt(100))
	maxUint := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
	calls := []simCall{
		{From: u.Trader, To: u.TokenA, Input: pack(erc20, "approve", u.Pair, maxUint)},
		{From: u.Trader, To: u.TokenA, Input: pack(erc20, "transfer", u.Pair, amountIn)},
		{From: u.Trader, To: u.Pair, Input: pack(pair, "swap", out0, out1, u.Trader, []byte{})},
		{From: u.Trader, To: u.TokenA, Input: pack(erc20, "transfer", u.Pair, liquidity)},
		{From: u.Trader, To: u.TokenB, Input: pack(erc20, "transfer", u.Pair, liquidity)},
		{From: u.Trader, To: u.Pair, Input: pack(pair, "mint", u.Trader)},
	}
	req := map[string]any{"blockStateCalls": []simBlock{{Calls: calls}}}
	var none map[[2]int][]byte
	return Workload{Name: UniswapName(tag), Calls: 1,
		Bodies: [][]byte{load.Encode(load.NewCall(1, "eth_simulateV1", req, tag))},
		Expect: ExpectSimulated([]int{len(calls)}, none)}
}
