package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Params are a request's positional parameters, each still raw JSON.
type Params []json.RawMessage

// errNonArrayParams: "params" is neither absent, null nor an array.
var errNonArrayParams = &InvalidParamsError{Msg: "non-array args: params must be a positional array"}

// splitParams accepts an absent or null "params" (no parameters) or an array.
func splitParams(raw json.RawMessage) (Params, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '[' {
		return nil, errNonArrayParams
	}
	var p Params
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, &InvalidParamsError{Msg: "invalid params: " + err.Error()}
	}
	return p, nil
}

// Len is the number of parameters given.
func (p Params) Len() int { return len(p) }

// Present reports whether parameter i was given and is not null.
func (p Params) Present(i int) bool {
	return i < len(p) && string(p[i]) != "null"
}

// Max fails when more than n parameters were given, as geth does.
func (p Params) Max(n int) error {
	if len(p) > n {
		return &InvalidParamsError{Msg: fmt.Sprintf("too many arguments, want at most %d", n)}
	}
	return nil
}

// Required decodes parameter i into v; a missing parameter is an error.
func (p Params) Required(i int, v any) error {
	if !p.Present(i) {
		return &InvalidParamsError{Msg: fmt.Sprintf("missing value for required argument %d", i)}
	}
	return p.decode(i, v)
}

// Optional decodes parameter i into v when present; ok reports whether it was.
func (p Params) Optional(i int, v any) (ok bool, err error) {
	if !p.Present(i) {
		return false, nil
	}
	return true, p.decode(i, v)
}

func (p Params) decode(i int, v any) error {
	if err := decodeValue(p[i], v); err != nil {
		return &InvalidParamsError{Msg: fmt.Sprintf("invalid argument %d: %s", i, jsonErrorText(err))}
	}
	return nil
}

// jsonErrorText strips encoding/json's Go-type prefixes where go-ethereum's
// hexutil already gives a precise message.
func jsonErrorText(err error) string {
	if ute, ok := err.(*json.UnmarshalTypeError); ok {
		return fmt.Sprintf("cannot unmarshal %s into %s", ute.Value, ute.Type)
	}
	return err.Error()
}
