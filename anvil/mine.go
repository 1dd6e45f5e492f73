package anvil

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/seqapi"
	"github.com/preconf/preconf/sequencer"
)

// MaxMineBlocks caps the blocks one anvil_mine or evm_mine call seals: each
// is a real block (executed, logged, fsync'd, flushed), a few milliseconds
// apiece, and one request must not hold the node for unbounded time.
const MaxMineBlocks = 100_000

// evmMine seals blocks now, as anvil's evm_mine: no parameter or null for
// one block, a timestamp for one block at that time, or {timestamp,
// blocks}. It answers "0x0" as anvil and hardhat do.
func (a *API) evmMine(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.Max(1); err != nil {
		return nil, err
	}
	opts := sequencer.MineOptions{Blocks: 1}
	if p.Present(0) {
		raw := bytes.TrimSpace(p[0])
		if len(raw) > 0 && raw[0] == '{' {
			var o struct {
				Timestamp *json.RawMessage `json:"timestamp"`
				Blocks    *json.RawMessage `json:"blocks"`
			}
			if err := json.Unmarshal(raw, &o); err != nil {
				return nil, &rpc.InvalidParamsError{Msg: "invalid argument 0: " + err.Error()}
			}
			if o.Timestamp != nil && string(*o.Timestamp) != "null" {
				ts, err := quantity(*o.Timestamp, "timestamp")
				if err != nil {
					return nil, err
				}
				opts.Timestamp = &ts
			}
			if o.Blocks != nil && string(*o.Blocks) != "null" {
				n, err := quantity(*o.Blocks, "blocks")
				if err != nil {
					return nil, err
				}
				opts.Blocks = n
			}
		} else {
			ts, err := quantity(raw, "timestamp")
			if err != nil {
				return nil, err
			}
			opts.Timestamp = &ts
		}
	}
	if err := a.mine(ctx, opts); err != nil {
		return nil, err
	}
	return "0x0", nil
}

// anvilMine seals blocks now, as anvil's anvil_mine (and hardhat_mine):
// [blocks (default 1), interval in seconds added to the clock before each
// block]. It answers null.
func (a *API) anvilMine(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.Max(2); err != nil {
		return nil, err
	}
	opts := sequencer.MineOptions{Blocks: 1}
	for i, dst := range []*uint64{&opts.Blocks, &opts.Interval} {
		if !p.Present(i) {
			continue
		}
		v, err := quantity(p[i], fmt.Sprintf("argument %d", i))
		if err != nil {
			return nil, err
		}
		*dst = v
	}
	if err := a.mine(ctx, opts); err != nil {
		return nil, err
	}
	return nil, nil
}

func (a *API) mine(ctx context.Context, opts sequencer.MineOptions) error {
	if opts.Blocks > MaxMineBlocks {
		return &rpc.InvalidParamsError{Msg: fmt.Sprintf("%d blocks asked, at most %d per call", opts.Blocks, MaxMineBlocks)}
	}
	return seqapi.Coded(a.s.Mine(ctx, opts), rpc.CodeServer)
}

// quantity reads a number given as a JSON number or a hex quantity string
// (anvil takes both).
func quantity(raw json.RawMessage, name string) (uint64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var q hexutil.Uint64
		if err := json.Unmarshal(raw, &q); err != nil {
			return 0, &rpc.InvalidParamsError{Msg: fmt.Sprintf("invalid %s: %v", name, err)}
		}
		return uint64(q), nil
	}
	var n uint64
	if err := json.Unmarshal(raw, &n); err != nil || strings.ContainsAny(string(raw), ".eE") {
		return 0, &rpc.InvalidParamsError{Msg: fmt.Sprintf("invalid %s: want a non-negative integer or a hex quantity, got %s", name, raw)}
	}
	return n, nil
}
