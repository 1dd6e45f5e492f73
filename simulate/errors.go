package simulate

import (
	"errors"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/vm"
)

// JSON-RPC error codes of the execution methods (execution-apis and
// go-ethereum). Errors returned by this package carry them through
// ErrorCode(), so that an RPC layer can pass them on without knowing this
// package's types.
const (
	CodeReverted            = 3
	CodeServer              = -32000
	CodeInternal            = -32603
	CodeInvalidParams       = -32602
	CodeVMError             = -32015
	CodeTimeout             = -32016
	CodeNonceTooLow         = -38010
	CodeNonceTooHigh        = -38011
	CodeBaseFeeTooLow       = -38012
	CodeIntrinsicGas        = -38013
	CodeInsufficientFunds   = -38014
	CodeBlockGasLimit       = -38015
	CodeBlockNumberInvalid  = -38020
	CodeBlockTimeInvalid    = -38021
	CodeSenderNotEOA        = -38024
	CodeMaxInitCodeSize     = -38025
	CodeClientLimitExceeded = -38026
)

// Error is an execution error with a JSON-RPC code and optional data.
type Error struct {
	Code int
	Msg  string
	Data any
}

func (e *Error) Error() string  { return e.Msg }
func (e *Error) ErrorCode() int { return e.Code }

// ErrorData is the "data" member (nil: none).
func (e *Error) ErrorData() any { return e.Data }

// RevertError is "execution reverted" (code 3) with the revert data as hex,
// and the decoded reason string in the message when the data is an
// Error(string).
type RevertError struct {
	msg  string
	data string
}

// NewRevertError builds the error for revert data.
func NewRevertError(data []byte) *RevertError {
	msg := vm.ErrExecutionReverted.Error()
	if reason, err := abi.UnpackRevert(data); err == nil {
		msg += ": " + reason
	}
	return &RevertError{msg: msg, data: hexutil.Encode(data)}
}

func (e *RevertError) Error() string  { return e.msg }
func (e *RevertError) ErrorCode() int { return CodeReverted }
func (e *RevertError) ErrorData() any { return e.data }

// Is lets errors.Is(err, vm.ErrExecutionReverted) hold.
func (e *RevertError) Is(target error) bool { return target == vm.ErrExecutionReverted }

// DataHex is the revert data, 0x-prefixed.
func (e *RevertError) DataHex() string { return e.data }

func timeoutError(d time.Duration) error {
	return &Error{Code: CodeTimeout, Msg: fmt.Sprintf("execution aborted (timeout = %v)", d)}
}

// txError maps a transaction-validity failure in a simulated block to the
// eth_simulateV1 code for its cause.
func txError(err error) error {
	var coded *Error
	if errors.As(err, &coded) {
		return err
	}
	code := CodeInternal
	switch {
	case errors.Is(err, core.ErrNonceTooHigh):
		code = CodeNonceTooHigh
	case errors.Is(err, core.ErrNonceTooLow):
		code = CodeNonceTooLow
	case errors.Is(err, core.ErrSenderNoEOA):
		code = CodeSenderNotEOA
	case errors.Is(err, core.ErrFeeCapVeryHigh), errors.Is(err, core.ErrTipVeryHigh), errors.Is(err, core.ErrTipAboveFeeCap):
		code = CodeInvalidParams
	case errors.Is(err, core.ErrFeeCapTooLow):
		code = CodeBaseFeeTooLow
	case errors.Is(err, core.ErrInsufficientFunds), errors.Is(err, core.ErrInsufficientFundsForTransfer):
		code = CodeInsufficientFunds
	case errors.Is(err, core.ErrIntrinsicGas):
		code = CodeIntrinsicGas
	case errors.Is(err, vm.ErrMaxInitCodeSizeExceeded):
		code = CodeMaxInitCodeSize
	}
	return &Error{Code: code, Msg: err.Error()}
}

func limitError(format string, args ...any) error {
	return &Error{Code: CodeClientLimitExceeded, Msg: fmt.Sprintf(format, args...)}
}
