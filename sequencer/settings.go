package sequencer

import (
	"context"
	"fmt"
	"math/big"
	"slices"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/rlp"
)

// settings are what the dev methods set for the blocks to come and for
// eth_sendTransaction: the coinbase, gas limit and next base fee, the
// clock, the impersonated accounts. The sequencer goroutine owns them; a
// change is logged (recSettings, synced) before it takes effect, every WAL
// rotation logs them again, and recovery takes the last one logged.
type settings struct {
	coinbase common.Address
	// gasLimit, when non-zero, is every block's gas limit
	// (anvil_setBlockGasLimit); zero follows the parent (or --gas-ceil).
	gasLimit uint64
	// baseFee, when set, is block baseFeeFor's base fee
	// (anvil_setNextBlockBaseFeePerGas); later blocks follow EIP-1559 from it.
	baseFee    *big.Int
	baseFeeFor uint64
	clock      clock
	// impersonated accounts send eth_sendTransaction without a key
	// (anvil_impersonateAccount); with autoImpersonate every account does.
	impersonated    []common.Address
	autoImpersonate bool
	// nextSnapshot is the next evm_snapshot id (ids are never reused).
	nextSnapshot uint64
}

// storedSettings is the logged form of settings (RLP has no signed
// integers: the clock offset is stored as its two's complement).
type storedSettings struct {
	Coinbase        common.Address
	GasLimit        uint64
	BaseFee         *big.Int `rlp:"nil"`
	BaseFeeFor      uint64
	Offset          uint64
	Exact           uint64
	Interval        uint64
	Stepped         bool
	Impersonated    []common.Address
	AutoImpersonate bool
	NextSnapshot    uint64
}

func (st *settings) record() (*record, error) {
	enc, err := rlp.EncodeToBytes(&storedSettings{
		Coinbase: st.coinbase, GasLimit: st.gasLimit, BaseFee: st.baseFee, BaseFeeFor: st.baseFeeFor,
		Offset: uint64(st.clock.offset), Exact: st.clock.exact, Interval: st.clock.interval, Stepped: st.clock.stepped,
		Impersonated: st.impersonated, AutoImpersonate: st.autoImpersonate, NextSnapshot: st.nextSnapshot,
	})
	if err != nil {
		return nil, fmt.Errorf("encode settings: %w", err)
	}
	return &record{Kind: recSettings, Entries: [][]byte{enc}}, nil
}

func decodeSettings(rec *record) (settings, error) {
	var d storedSettings
	if len(rec.Entries) != 1 {
		return settings{}, fmt.Errorf("settings record with %d entries", len(rec.Entries))
	}
	if err := rlp.DecodeBytes(rec.Entries[0], &d); err != nil {
		return settings{}, fmt.Errorf("decode settings: %w", err)
	}
	return settings{
		coinbase: d.Coinbase, gasLimit: d.GasLimit, baseFee: d.BaseFee, baseFeeFor: d.BaseFeeFor,
		clock:        clock{offset: int64(d.Offset), exact: d.Exact, interval: d.Interval, stepped: d.Stepped},
		impersonated: d.Impersonated, autoImpersonate: d.AutoImpersonate, nextSnapshot: d.NextSnapshot,
	}, nil
}

// clone copies st (its slices and big numbers are replaced, never changed
// in place, so sharing them is safe).
func (st *settings) clone() *settings {
	c := *st
	c.impersonated = slices.Clone(st.impersonated)
	return &c
}

// Settings are the dev methods' settings as readers see them.
type Settings struct {
	Coinbase common.Address
	// GasLimit is the gas limit set for every block (0: not set).
	GasLimit        uint64
	Impersonated    []common.Address
	AutoImpersonate bool
	// TimeOffset is the clock's offset from the wall clock in seconds.
	TimeOffset int64
}

// Settings returns the current settings.
func (s *Sequencer) Settings() Settings {
	st := s.shared.Load()
	return Settings{Coinbase: st.coinbase, GasLimit: st.gasLimit, Impersonated: slices.Clone(st.impersonated),
		AutoImpersonate: st.autoImpersonate, TimeOffset: st.clock.offset}
}

// Impersonating reports whether eth_sendTransaction from addr needs no key.
func (s *Sequencer) Impersonating(addr common.Address) bool {
	st := s.shared.Load()
	return st.autoImpersonate || slices.Contains(st.impersonated, addr)
}

// share publishes the settings to readers.
func (s *Sequencer) share() { s.shared.Store(s.set.clone()) }

// configure changes the settings on the sequencer goroutine: change edits
// a copy and returns the method's answer, or a refusal, which changes
// nothing; the new settings are logged before they take effect (apply).
func (s *Sequencer) configure(ctx context.Context, change func(next *settings) (any, error)) (any, error) {
	var (
		answer  any
		refused error
	)
	err := s.do(ctx, func() error {
		next := s.set.clone()
		answer, refused = change(next)
		if refused != nil {
			refused = &RefusedError{refused}
			return nil
		}
		return s.applySettings(next)
	})
	if err != nil {
		return nil, err
	}
	return answer, refused
}

// applySettings makes next the settings: logged, shared, and, when they change the
// environment of the open block and it holds no transaction yet, the block
// re-opened with it, so that pending shows the new coinbase, base fee, gas
// limit or time at once; otherwise the next block has them.
func (s *Sequencer) applySettings(next *settings) error {
	rec, err := next.record()
	if err != nil {
		return err
	}
	if s.wal != nil {
		if err := s.wal.Append(rec); err != nil {
			return err
		}
	}
	prev := s.set
	s.set = next
	s.share()
	envChanged := prev.coinbase != next.coinbase || prev.gasLimit != next.gasLimit || prev.clock != next.clock ||
		prev.baseFeeFor != next.baseFeeFor || !bigEqual(prev.baseFee, next.baseFee)
	if !envChanged || !s.blk.empty() {
		return nil
	}
	if err := s.reopen(); err != nil {
		return err
	}
	return s.publish(s.blk, 0, true)
}

func bigEqual(a, b *big.Int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Cmp(b) == 0
}
