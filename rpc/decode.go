package rpc

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
)

// A hand-written decoder for the common request shape. It accepts only a
// strict subset of JSON that it can validate exactly — ASCII strings without
// escapes, plain numbers, literals, nesting up to maxFastDepth — and the four
// envelope keys spelled exactly; on anything else it reports !ok and the
// request takes the encoding/json path, which then decides (and words any
// error). Within the subset the outcome is the same as json.Valid followed by
// json.Unmarshal into request and splitParams, without reflection or copies:
// the raw members are sub-slices of the message.

const maxFastDepth = 32

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
	s := fastScanner{b: msg}
	if s.next() != '{' {
		return false
	}
	s.i++
	s.ws()
	if s.next() == '}' {
		s.i++
		return s.end()
	}
	for {
		key, ok := s.str()
		if !ok {
			return false
		}
		s.ws()
		if s.next() != ':' {
			return false
		}
		s.i++
		s.ws()
		switch string(key) {
		case "params":
			req.hasParams = true
			req.paramsNull, req.paramsNotArray, req.params = false, false, req.params[:0]
			switch s.next() {
			case '[':
				req.params = make(Params, 0, 4)
				if !s.array(1, &req.params) {
					return false
				}
			case 'n':
				if !s.literal("null") {
					return false
				}
				req.paramsNull = true
			default:
				if _, ok := s.value(1); !ok {
					return false
				}
				req.paramsNotArray = true
			}
		case "jsonrpc", "method", "id":
			v, ok := s.value(1)
			if !ok {
				return false
			}
			switch string(key) {
			case "jsonrpc":
				req.jsonrpc = v
			case "method":
				req.method = v
			default:
				req.id = v
			}
		default:
			// Other keys would be matched case-insensitively (or ignored)
			// by encoding/json: leave them to it.
			return false
		}
		s.ws()
		switch s.next() {
		case ',':
			s.i++
			s.ws()
		case '}':
			s.i++
			return s.end()
		default:
			return false
		}
	}
}

type fastScanner struct {
	b []byte
	i int
}

func (s *fastScanner) next() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *fastScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *fastScanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// str scans a string in the subset and returns its contents.
func (s *fastScanner) str() ([]byte, bool) {
	if s.next() != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		if c == '"' {
			s.i = j + 1
			return s.b[start:j], true
		}
		if c < 0x20 || c == '\\' || c >= 0x80 {
			return nil, false
		}
	}
	return nil, false
}

func (s *fastScanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// number scans a JSON number exactly per the grammar.
func (s *fastScanner) number() bool {
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.next() == '-' {
		s.i++
	}
	switch c := s.next(); {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		digits()
	default:
		return false
	}
	if s.next() == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if c := s.next(); c == 'e' || c == 'E' {
		s.i++
		if c := s.next(); c == '+' || c == '-' {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// value scans one value and returns its raw bytes.
func (s *fastScanner) value(depth int) ([]byte, bool) {
	start := s.i
	var ok bool
	switch c := s.next(); {
	case c == '"':
		_, ok = s.str()
	case c == '{':
		ok = s.object(depth + 1)
	case c == '[':
		ok = s.array(depth+1, nil)
	case c == 't':
		ok = s.literal("true")
	case c == 'f':
		ok = s.literal("false")
	case c == 'n':
		ok = s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		ok = s.number()
	}
	if !ok {
		return nil, false
	}
	return s.b[start:s.i], true
}

// array scans an array; with elems set, its elements are appended to it.
func (s *fastScanner) array(depth int, elems *Params) bool {
	if depth > maxFastDepth || s.next() != '[' {
		return false
	}
	s.i++
	s.ws()
	if s.next() == ']' {
		s.i++
		if elems != nil && *elems == nil {
			*elems = Params{}
		}
		return true
	}
	for {
		v, ok := s.value(depth)
		if !ok {
			return false
		}
		if elems != nil {
			*elems = append(*elems, v)
		}
		s.ws()
		switch s.next() {
		case ',':
			s.i++
			s.ws()
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

func (s *fastScanner) object(depth int) bool {
	if depth > maxFastDepth || s.next() != '{' {
		return false
	}
	s.i++
	s.ws()
	if s.next() == '}' {
		s.i++
		return true
	}
	for {
		if _, ok := s.str(); !ok {
			return false
		}
		s.ws()
		if s.next() != ':' {
			return false
		}
		s.i++
		s.ws()
		if _, ok := s.value(depth); !ok {
			return false
		}
		s.ws()
		switch s.next() {
		case ',':
			s.i++
			s.ws()
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// plainString returns the contents of a JSON string literal that needs no
// unescaping (ASCII, no escapes, no control characters).
func plainString(raw []byte) ([]byte, bool) {
	s := fastScanner{b: raw}
	v, ok := s.str()
	return v, ok && s.i == len(raw)
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
