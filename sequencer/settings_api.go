package sequencer

import (
	"context"
	"fmt"
	"math/big"
	"slices"

	"github.com/ethereum/go-ethereum/common"
)

// The dev methods' settings, one method each (the anvil package serves
// them over JSON-RPC with anvil's names).

// SetCoinbase makes addr the fee recipient of the blocks to come
// (anvil_setCoinbase).
func (s *Sequencer) SetCoinbase(ctx context.Context, addr common.Address) error {
	_, err := s.configure(ctx, func(next *settings) (any, error) {
		next.coinbase = addr
		return nil, nil
	})
	return err
}

// SetGasLimit makes gas the gas limit of the blocks to come
// (anvil_setBlockGasLimit).
func (s *Sequencer) SetGasLimit(ctx context.Context, gas uint64) error {
	_, err := s.configure(ctx, func(next *settings) (any, error) {
		if gas == 0 {
			return nil, fmt.Errorf("a block gas limit of 0 leaves no room for any transaction")
		}
		next.gasLimit = gas
		return nil, nil
	})
	return err
}

// SetNextBaseFee makes fee the base fee of the next block without
// transactions yet: the open one when it holds none, otherwise the one
// after (anvil_setNextBlockBaseFeePerGas). Later blocks follow EIP-1559 from it.
func (s *Sequencer) SetNextBaseFee(ctx context.Context, fee *big.Int) error {
	if !s.config.IsLondon(s.chain.Head().Number) {
		return &RefusedError{fmt.Errorf("the chain has no base fee before London")}
	}
	_, err := s.configure(ctx, func(next *settings) (any, error) {
		next.baseFee = new(big.Int).Set(fee)
		next.baseFeeFor = s.nextEmpty()
		return nil, nil
	})
	return err
}

// nextEmpty is the number of the next block without transactions: the
// open one while it holds none (but, on an OP-stack chain, its
// L1-attributes deposit: openBlock.empty).
func (s *Sequencer) nextEmpty() uint64 {
	n := s.blk.Header.Number.Uint64()
	if !s.blk.empty() {
		n++
	}
	return n
}

// IncreaseTime moves the clock secs seconds forward and returns its total
// offset from the wall clock (evm_increaseTime).
func (s *Sequencer) IncreaseTime(ctx context.Context, secs uint64) (int64, error) {
	v, err := s.configure(ctx, func(next *settings) (any, error) {
		next.clock.offset = addSat(next.clock.offset, secs)
		return next.clock.offset, nil
	})
	if err != nil {
		return 0, err
	}
	return v.(int64), nil
}

func addSat(a int64, b uint64) int64 {
	if b > uint64(1<<63-1) || a > 1<<63-1-int64(b) {
		return 1<<63 - 1
	}
	return a + int64(b)
}

// SetNextBlockTimestamp makes t the timestamp of the open block, re-opened
// at it (evm_setNextBlockTimestamp); the clock goes on from t. It must be
// after the latest block's and the open block must hold no transaction yet
// (pre-confirmed transactions keep the time they executed at).
func (s *Sequencer) SetNextBlockTimestamp(ctx context.Context, t uint64) error {
	_, err := s.configure(ctx, func(next *settings) (any, error) {
		if err := s.timeRefusal(t); err != nil {
			return nil, err
		}
		next.clock.exact = t
		return nil, nil
	})
	return err
}

// timeRefusal says why the open block cannot get timestamp t.
func (s *Sequencer) timeRefusal(t uint64) error {
	b := s.blk
	if t <= b.Parent.Time {
		return notAfterParent(t, b.Parent)
	}
	if !b.empty() && t != b.Header.Time {
		return fmt.Errorf("the pending block %d already pre-confirmed %d transactions executed at timestamp %d; a timestamp can be chosen only for a block without pre-confirmed transactions (mine it first, or start with --flashblock-interval 0 to keep transactions unexecuted until mined)", b.Header.Number, len(b.Txs), b.Header.Time)
	}
	return nil
}

// SetTime makes t the time now (anvil_setTime) and returns how far ahead
// of the pending block's time it is (0 when behind). Blocks never go back
// in time here: the next one is at least the latest's time + 1.
func (s *Sequencer) SetTime(ctx context.Context, t uint64) (uint64, error) {
	v, err := s.configure(ctx, func(next *settings) (any, error) {
		before := next.clock.blockTime(s.blk.Parent)
		next.clock.reset(t)
		if t > before {
			return t - before, nil
		}
		return uint64(0), nil
	})
	if err != nil {
		return 0, err
	}
	return v.(uint64), nil
}

// SetTimestampInterval makes every block secs seconds after its parent
// (anvil_setBlockTimestampInterval); remove (with secs ignored) goes back to
// the clock and reports whether an interval was set.
func (s *Sequencer) SetTimestampInterval(ctx context.Context, secs uint64, remove bool) (bool, error) {
	v, err := s.configure(ctx, func(next *settings) (any, error) {
		was := next.clock.stepped
		if remove {
			if was { // the clock goes on from the last stepped time
				next.clock.reset(next.clock.blockTime(s.blk.Parent) - 1)
			}
			next.clock.stepped, next.clock.interval = false, 0
		} else {
			next.clock.stepped, next.clock.interval = true, secs
		}
		return was, nil
	})
	if err != nil {
		return false, err
	}
	return v.(bool), nil
}

// Impersonate starts (or, with on false, stops) impersonating addr:
// eth_sendTransaction from it needs no key (anvil_impersonateAccount).
func (s *Sequencer) Impersonate(ctx context.Context, addr common.Address, on bool) error {
	_, err := s.configure(ctx, func(next *settings) (any, error) {
		i := slices.Index(next.impersonated, addr)
		switch {
		case on && i < 0:
			next.impersonated = append(next.impersonated, addr)
		case !on && i >= 0:
			next.impersonated = slices.Delete(next.impersonated, i, i+1)
		}
		return nil, nil
	})
	return err
}

// AutoImpersonate makes every account impersonated, or stops it
// (anvil_autoImpersonateAccount).
func (s *Sequencer) AutoImpersonate(ctx context.Context, on bool) error {
	_, err := s.configure(ctx, func(next *settings) (any, error) {
		next.autoImpersonate = on
		return nil, nil
	})
	return err
}
