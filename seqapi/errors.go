package seqapi

import (
	"errors"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/sequencer"
)

// The sequencer answers in Go: its sentinels and error types, and the
// pool's and core's errors beneath it. The methods answer JSON-RPC codes,
// mapped here once, as go-ethereum's ethapi codes core's errors at its
// edge; the anvil package codes its methods' errors with Coded too.

// codes are the engine's errors whose code is the same in every method.
var codes = []struct {
	is   func(error) bool
	code int
}{
	{isA[*sequencer.RefusedError], rpc.CodeInvalidParams}, // bad input for the state it met
	{isA[*sequencer.TimeTakenError], rpc.CodeServer},
	{isErr(sequencer.ErrUnknownParent), rpc.CodeServer},
	{isErr(sequencer.ErrInvalidTimestamp), rpc.CodeServer},
	{isErr(sequencer.ErrNotOPStack), rpc.CodeServer},
}

func isA[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

func isErr(sentinel error) func(error) bool {
	return func(err error) bool { return errors.Is(err, sentinel) }
}

// Coded is the JSON-RPC error the node answers for err, with err's message:
// an error already coded (eth_estimateGas's, through a GasEstimator) keeps
// its code, one of the table's gets the table's, anything else (the pool's
// and core's refusals, failures) gets otherwise.
func Coded(err error, otherwise int) error {
	if err == nil {
		return nil
	}
	if c, ok := known(err); ok {
		return c
	}
	return &rpc.CodedError{Code: otherwise, Msg: err.Error()}
}

// known is err coded when it already is or the table has it.
func known(err error) (error, bool) {
	var c rpc.Error
	if errors.As(err, &c) {
		return err, true
	}
	for _, e := range codes {
		if e.is(err) {
			return &rpc.CodedError{Code: e.code, Msg: err.Error()}, true
		}
	}
	return nil, false
}

// ErrNoSequencer answers transaction intake on a node without a sequencer.
var ErrNoSequencer = &rpc.ServerError{Msg: "this node does not sequence (started with --no-sequencer): transactions are not accepted"}

// mineError answers a failed automine seal (the transaction is admitted
// and durable; the sequencer says why it could not seal).
func mineError(err error) error {
	if c, ok := known(err); ok {
		return c
	}
	return &rpc.InternalError{Msg: "transaction admitted, but the automine seal failed: " + err.Error()}
}

// NonceGapError is EIP-7966's answer to a transaction whose nonce leaves a
// gap: the expected nonce, in the data as a hex quantity.
func NonceGapError(txNonce, expected uint64) error {
	return &rpc.CodedError{
		Code: rpc.CodeServer,
		Msg:  fmt.Sprintf("nonce too high: tx nonce %d, expected nonce %d (the transaction is queued until the gap is filled)", txNonce, expected),
		Data: hexutil.Uint64(expected).String(),
	}
}

// SyncTimeoutError is EIP-7966's answer when the transaction was accepted but
// not processed within the timeout (go-ethereum's code and words; the data
// is the transaction hash).
func SyncTimeoutError(timeout time.Duration, hash common.Hash) error {
	return &rpc.CodedError{Code: 4, Msg: fmt.Sprintf("The transaction was added to the transaction pool but wasn't processed in %v", timeout), Data: hash.Hex()}
}
