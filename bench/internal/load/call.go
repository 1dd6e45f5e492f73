package load

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Call is one JSON-RPC request object.
type Call struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int    `json:"id"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

func Encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encode request: %v", err)) // static shapes only
	}
	return b
}

func NewCall(id int, method string, params ...any) Call {
	if params == nil {
		params = []any{}
	}
	return Call{JSONRPC: "2.0", ID: id, Method: method, Params: params}
}

var (
	resultKey = []byte(`"result"`)
	errorKey  = []byte(`"error"`)
)

// CheckCalls is the cheap per-answer check used under load: the answer holds
// calls results and no error object.
func CheckCalls(calls int) func([]byte) error {
	return func(body []byte) error {
		if bytes.Contains(body, errorKey) {
			return fmt.Errorf("JSON-RPC error: %.200s", body)
		}
		if n := bytes.Count(body, resultKey); n != calls {
			return fmt.Errorf("%d results in answer, want %d: %.200s", n, calls, body)
		}
		return nil
	}
}
