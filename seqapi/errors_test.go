package seqapi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/txpool"

	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/sequencer"
)

// TestCoded: each engine error's code and message, as a method that codes
// anything else -32000 (intake, testing_buildBlockV1, evm_mine) and one that
// codes it -32603 (the anvil methods) answer it.
func TestCoded(t *testing.T) {
	estimate := &rpc.CodedError{Code: 3, Msg: "execution reverted", Data: "0x2a"}
	tests := []struct {
		name           string
		err            error
		server, intern int // the code under -32000 and -32603 defaults
		msg            string
	}{
		{"refused", &sequencer.RefusedError{Err: errors.New("timestamp 0 is not after the latest block's (0, block 0)")}, -32602, -32602, "timestamp 0 is not after the latest block's (0, block 0)"},
		{"refused, wrapped", fmt.Errorf("mined 0 of 1 blocks: %w", &sequencer.RefusedError{Err: sequencer.ErrNoFlashblocks}), -32602, -32602, "mined 0 of 1 blocks: " + sequencer.ErrNoFlashblocks.Error()},
		{"time taken", &sequencer.TimeTakenError{Number: 3, Txs: 2, Time: 100}, -32000, -32000, "the pending block 3 already pre-confirmed 2 transactions executed at timestamp 100; a timestamp can be chosen only for a block without pre-confirmed transactions (start with --flashblock-interval 0 to keep transactions unexecuted until mined)"},
		{"unknown parent", fmt.Errorf("%w 0x01", sequencer.ErrUnknownParent), -32000, -32000, "unknown parent block 0x01"},
		{"invalid timestamp", fmt.Errorf("%w, parent 5 given 5", sequencer.ErrInvalidTimestamp), -32000, -32000, "invalid timestamp, parent 5 given 5"},
		{"not an OP-stack chain", sequencer.ErrNotOPStack, -32000, -32000, sequencer.ErrNotOPStack.Error()},
		{"already coded", estimate, 3, 3, "execution reverted"},
		{"pool", txpool.ErrUnderpriced, -32000, -32603, "transaction underpriced"},
		{"core", fmt.Errorf("%w: next nonce 1, tx nonce 0", core.ErrNonceTooLow), -32000, -32603, "nonce too low: next nonce 1, tx nonce 0"},
		{"stopped", errors.New("sequencer stopped"), -32000, -32603, "sequencer stopped"},
	}
	for _, tt := range tests {
		for _, c := range []struct{ otherwise, want int }{{rpc.CodeServer, tt.server}, {rpc.CodeInternal, tt.intern}} {
			var got rpc.Error
			if !errors.As(Coded(tt.err, c.otherwise), &got) || got.ErrorCode() != c.want || got.Error() != tt.msg {
				t.Errorf("%s (otherwise %d): %v, want %d %q", tt.name, c.otherwise, got, c.want, tt.msg)
			}
		}
	}
	if Coded(estimate, rpc.CodeServer) != error(estimate) {
		t.Error("an already coded error is not answered as it is (its data would be lost)")
	}
	if Coded(nil, rpc.CodeServer) != nil {
		t.Error("nil is coded")
	}
}
