package rpc

import (
	"errors"
	"fmt"
)

// Standard JSON-RPC 2.0 and EIP-1474 error codes.
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternal         = -32603
	CodeServer           = -32000 // EIP-1474 "invalid input"; geth uses it for "header not found"
	CodeLimitExceeded    = -32005
	CodeExecutionTimeout = -32016
)

// Error is an error that carries a JSON-RPC code. Handlers return values of
// the types below (or their own implementations); anything else becomes a
// -32603 internal error.
type Error interface {
	error
	ErrorCode() int
}

// DataError is an Error with a "data" member.
type DataError interface {
	Error
	ErrorData() any
}

// ParseError: the body is not valid JSON.
type ParseError struct{ Msg string }

func (e *ParseError) Error() string  { return e.Msg }
func (e *ParseError) ErrorCode() int { return CodeParseError }

// InvalidRequestError: valid JSON, but not a JSON-RPC 2.0 request.
type InvalidRequestError struct{ Msg string }

func (e *InvalidRequestError) Error() string  { return e.Msg }
func (e *InvalidRequestError) ErrorCode() int { return CodeInvalidRequest }

// MethodNotFoundError: no such method.
type MethodNotFoundError struct{ Method string }

func (e *MethodNotFoundError) Error() string {
	return fmt.Sprintf("the method %s does not exist/is not available", e.Method)
}
func (e *MethodNotFoundError) ErrorCode() int { return CodeMethodNotFound }

// InvalidParamsError: the parameters do not fit the method.
type InvalidParamsError struct{ Msg string }

func (e *InvalidParamsError) Error() string  { return e.Msg }
func (e *InvalidParamsError) ErrorCode() int { return CodeInvalidParams }

// InvalidParams builds an InvalidParamsError from a format.
func InvalidParams(format string, args ...any) error {
	return &InvalidParamsError{Msg: fmt.Sprintf(format, args...)}
}

// InternalError: the node failed; the request may be fine.
type InternalError struct{ Msg string }

func (e *InternalError) Error() string  { return e.Msg }
func (e *InternalError) ErrorCode() int { return CodeInternal }

// ServerError is -32000: the request is well-formed but cannot be answered
// from the node's state (e.g. "header not found").
type ServerError struct{ Msg string }

func (e *ServerError) Error() string  { return e.Msg }
func (e *ServerError) ErrorCode() int { return CodeServer }

// LimitExceededError is -32005: a configured limit was hit.
type LimitExceededError struct{ Msg string }

func (e *LimitExceededError) Error() string  { return e.Msg }
func (e *LimitExceededError) ErrorCode() int { return CodeLimitExceeded }

// CodedError is an application error with any code and optional data
// (execution reverted = 3, wallet 4001/4100/4902, simulate -38xxx, …).
type CodedError struct {
	Code int
	Msg  string
	Data any
}

func (e *CodedError) Error() string  { return e.Msg }
func (e *CodedError) ErrorCode() int { return e.Code }
func (e *CodedError) ErrorData() any { return e.Data }

// ErrHeaderNotFound is what geth answers for an unknown block.
var ErrHeaderNotFound = &ServerError{Msg: "header not found"}

// ErrShuttingDown answers a call that arrives while the node drains (Drain).
var ErrShuttingDown = &ServerError{Msg: "server is shutting down"}

// errorObject is the wire form of an error.
type errorObject struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func toErrorObject(err error) *errorObject {
	var e Error
	if errors.As(err, &e) {
		obj := &errorObject{Code: e.ErrorCode(), Message: err.Error()}
		var d DataError
		if errors.As(err, &d) {
			obj.Data = d.ErrorData()
		}
		return obj
	}
	return &errorObject{Code: CodeInternal, Message: err.Error()}
}
