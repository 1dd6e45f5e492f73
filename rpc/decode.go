package rpc

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"

	"github.com/preconf/preconf/internal/jsonscan"
)

// A hand-written decoder for the common request shape, on jsonscan's strict
// subset of JSON (which it validates exactly) and with the four envelope
// keys spelled exactly; on anything else it reports !ok and the request
// takes the encoding/json path, which then decides (and words any error).
// Within the subset the outcome is the same as json.Valid followed by
// json.Unmarshal into request and splitParams, without reflection or copies:
// the raw members are sub-slices of the message.

// fastDecode enables the decoder (tests turn it off to compare).
var fastDecode = true

// fastRequest is a decoded envelope.
type fastRequest struct {
	jsonrpc, method, id []byte // raw JSON values; nil when absent
	hasParams           bool
	paramsNull          bool
	params              Params // when hasParams and the value is an array
	paramsNotArray      bool
}

// decodeFast decodes msg (already trimmed of surrounding whitespace).
func decodeFast(msg []byte, req *fastRequest) bool {
	s := jsonscan.New(msg)
	return s.Object(func(key []byte) bool {
		switch string(key) {
		case "params":
			req.hasParams = true
			req.paramsNull, req.paramsNotArray, req.params = false, false, req.params[:0]
			switch s.Peek() {
			case '[':
				req.params = make(Params, 0, 4)
				return scanArray(&s, 1, &req.params)
			case 'n':
				req.paramsNull = true
				return s.Literal("null")
			default:
				req.paramsNotArray = true
				_, ok := s.Value(1)
				return ok
			}
		case "jsonrpc", "method", "id":
			v, ok := s.Value(1)
			switch string(key) {
			case "jsonrpc":
				req.jsonrpc = v
			case "method":
				req.method = v
			default:
				req.id = v
			}
			return ok
		}
		// Other keys would be matched case-insensitively (or ignored) by
		// encoding/json: leave them to it.
		return false
	}) && s.End()
}

// scanArray reads an array at depth, appending its elements' raw values to
// elems (an empty array: elems not nil).
func scanArray(s *jsonscan.Scanner, depth int, elems *Params) bool {
	if *elems == nil {
		*elems = Params{}
	}
	return depth <= jsonscan.MaxDepth && s.Array(func() bool {
		v, ok := s.Value(depth)
		*elems = append(*elems, v)
		return ok
	})
}

// plainString returns the contents of a JSON string literal that needs no
// unescaping (ASCII, no escapes, no control characters).
func plainString(raw []byte) ([]byte, bool) {
	s := jsonscan.New(raw)
	tok, ok := s.Str()
	if !ok || len(tok) != len(raw) {
		return nil, false
	}
	return tok[1 : len(tok)-1], true
}

// decodeValue is json.Unmarshal(raw, v) with shortcuts for the common
// parameter types: a type's own UnmarshalJSON (addresses, hashes, block
// selectors, hexutil numbers) is called directly, and plain strings are
// copied without reflection. The result, and any error, are the same.
func decodeValue(raw []byte, v any) error {
	if !fastDecode {
		return json.Unmarshal(raw, v)
	}
	switch x := v.(type) {
	case *string:
		if s, ok := plainString(raw); ok {
			*x = string(s)
			return nil
		}
	case json.Unmarshaler:
		// encoding/json checks the syntax first, then hands the value's
		// bytes to UnmarshalJSON unchanged (for a non-nil pointer; other
		// targets are its errors to report). A plain string — addresses,
		// hashes, block tags, hex numbers — is valid as it stands and
		// needs no json.Valid, whose byte-at-a-time state machine was most
		// of an address's decoding (BenchmarkDecodeParam) and 2 % of the
		// node's CPU on eth_getBalance (perf, 32 connections).
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
			if _, ok := plainString(raw); ok {
				return x.UnmarshalJSON(raw)
			}
			if json.Valid(raw) {
				return x.UnmarshalJSON(trimJSONSpace(raw))
			}
		}
	}
	return json.Unmarshal(raw, v)
}

func trimJSONSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for n := len(b); n > 0 && (b[n-1] == ' ' || b[n-1] == '\t' || b[n-1] == '\n' || b[n-1] == '\r'); n = len(b) {
		b = b[:n-1]
	}
	return b
}

// appendText writes v as encoding/json would when v is an
// encoding.TextMarshaler (and not a json.Marshaler) whose text needs no
// escaping — the hex quantities, hashes and addresses most methods return —
// without reflection. It reports false, writing nothing, for anything else.
func appendText(buf *bytes.Buffer, v any) bool {
	if !fastDecode {
		return false
	}
	tm, ok := v.(encoding.TextMarshaler)
	if !ok {
		return false
	}
	if _, ok := v.(json.Marshaler); ok {
		return false
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return false // encoding/json writes null
	}
	text, err := tm.MarshalText()
	if err != nil {
		return false // encoding/json reports it
	}
	for _, c := range text {
		// encoding/json escapes these (HTML-safe by default).
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	buf.WriteByte('"')
	buf.Write(text)
	buf.WriteByte('"')
	return true
}
