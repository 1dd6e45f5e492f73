package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// withSlowDecode runs f with the fast decoder off (encoding/json only).
func withSlowDecode(f func()) {
	fastDecode = false
	defer func() { fastDecode = true }()
	f()
}

var decodeCorpus = []string{
	`{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2]}`,
	` {"jsonrpc" : "2.0" , "id" : 1 , "method" : "test_add" , "params" : [ 1 , 2 ] } `,
	"{\n\t\"jsonrpc\":\"2.0\",\r\n\"id\":\"abc\",\"method\":\"test_add\",\"params\":[1,2]}",
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":[{"a":[1,2,{"b":null}],"c":true,"d":false}]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":[-0.5e+10]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":[01]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":[1.]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":[1e]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":["é"]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":["a\"b"]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":[]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":{"a":1}}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":"x"}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":[1,]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":[1 2]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":[tru]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":[nul]}`,
	`{"jsonrpc":"2.0","id":null,"method":"test_add","params":[1,2]}`,
	`{"jsonrpc":"2.0","method":"test_add","params":[1,2]}`,
	`{"jsonrpc":"2.0","method":"test_add","params":"bad"}`,
	`{"jsonrpc":"2.0","id":true,"method":"test_add","params":[1,2]}`,
	`{"jsonrpc":"2.0","id":[1],"method":"test_add"}`,
	`{"jsonrpc":"2.0","id":-1,"method":"test_add","params":[1,2]}`,
	`{"jsonrpc":"1.0","id":1,"method":"test_add","params":[1,2]}`,
	`{"jsonrpc":2.0,"id":1,"method":"test_add","params":[1,2]}`,
	`{"id":1,"method":"test_add","params":[1,2]}`,
	`{"jsonrpc":"2.0","id":1,"method":"","params":[1,2]}`,
	`{"jsonrpc":"2.0","id":1,"method":5,"params":[1,2]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_\u0061dd","params":[1,2]}`,
	`{"jsonrpc":"2.0","id":1,"method":"nope"}`,
	`{"jsonrpc":"2.0","id":1,"METHOD":"test_add","params":[1,2]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2],"extra":1}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_add","method":"test_echo","params":[1,2]}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"test_add","params":[1,2]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2],"params":[3,4]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2,3]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_add","params":["1",2]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_panic"}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_revert"}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_raw"}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2]}x`,
	`{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2]`,
	`{"jsonrpc":"2.0" "id":1}`,
	`{}`, `{ }`, `{"a"}`, `{"jsonrpc"}`, `{,}`, `{"jsonrpc":"2.0",}`, `[]`, `[ ]`, `[1]`, `[{}]`, `[,]`, `[{},]`,
	`[{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2]},{"jsonrpc":"2.0","method":"test_add","params":[1,2]},{"jsonrpc":"2.0","id":2,"method":"test_echo","params":["x"]}]`,
	`[{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2]} , 5 ]`,
	`[{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2]},{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2]},{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2]},{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2]}]`,
	`[{"jsonrpc":"2.0","method":"test_add","params":[1,2]}]`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":[` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `]}`,
	`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":["\u0001"]}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"test_echo\",\"params\":[\"\x01\"]}",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"test_echo\",\"params\":[\"\xff\"]}",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"test_echo\"\v}",
}

// The fast decoder answers every message exactly as encoding/json does.
func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	s := testServer()
	for _, msg := range decodeCorpus {
		fast := s.Handle(context.Background(), []byte(msg))
		var slow []byte
		withSlowDecode(func() { slow = s.Handle(context.Background(), []byte(msg)) })
		if string(fast) != string(slow) {
			t.Errorf("%s:\nfast %s\nslow %s", msg, fast, slow)
		}
	}
}

// The corpus covers both outcomes of the decoder.
func TestFastDecodeTakesCommonShapes(t *testing.T) {
	var req fastRequest
	for _, tc := range []struct {
		msg  string
		fast bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x00000000000000000000000000000000000000aa","pending"]}`, true},
		{`{"method":"eth_blockNumber","params":[],"id":7,"jsonrpc":"2.0"}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":["a b",{"k":[-1.5e3,true]}]}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":["a\"b"]}`, false},
		{`{"jsonrpc":"2.0","id":1,"Method":"x"}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":[01]}`, false},
	} {
		req = fastRequest{}
		if got := decodeFast([]byte(tc.msg), &req); got != tc.fast {
			t.Errorf("%s: fast %v, want %v", tc.msg, got, tc.fast)
		}
	}
	req = fastRequest{}
	decodeFast([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":[ "a" , {"b":[1]} ,null]}`), &req)
	if got := fmt.Sprintf("%s|%s|%s|%q", req.jsonrpc, req.method, req.id, req.params); got != `"2.0"|"m"|1|["\"a\"" "{\"b\":[1]}" "null"]` {
		t.Errorf("decoded %s", got)
	}
}

// FuzzFastDecode: for any message, both decoders give the same answer.
func FuzzFastDecode(f *testing.F) {
	for _, msg := range decodeCorpus {
		f.Add([]byte(msg))
	}
	s := testServer()
	f.Fuzz(func(t *testing.T, msg []byte) {
		fast := s.Handle(context.Background(), msg)
		var slow []byte
		withSlowDecode(func() { slow = s.Handle(context.Background(), msg) })
		if string(fast) != string(slow) {
			t.Fatalf("%q:\nfast %s\nslow %s", msg, fast, slow)
		}
	})
}

type textOnly struct{ v string }

func (t *textOnly) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		return errors.New("empty")
	}
	t.v = string(b)
	return nil
}

// decodeValue gives the same values and errors as json.Unmarshal.
func TestDecodeValueMatchesUnmarshal(t *testing.T) {
	raws := []string{
		`"0x00000000000000000000000000000000000000aa"`, `"0x00000000000000000000000000000000000000AA"`,
		`"0xaa"`, `"aa"`, `"0x` + strings.Repeat("ab", 32) + `"`, `"0x1"`, `"0x01"`, `"0x"`, `"0xg"`, `"1"`,
		`1`, `null`, `true`, `{}`, `[]`, `"latest"`, `"a\"b"`, `"é"`, `"\u0041"`, ` "0x1" `, `"0x1`, `nonsense`,
	}
	targets := []func() any{
		func() any { return new(common.Address) },
		func() any { return new(common.Hash) },
		func() any { return new(hexutil.Big) },
		func() any { return new(hexutil.Uint64) },
		func() any { return new(hexutil.Bytes) },
		func() any { return new(string) },
		func() any { return new(textOnly) },
		func() any { return new(*common.Address) },
		func() any { return new(any) },
	}
	for _, raw := range raws {
		for _, mk := range targets {
			a, b := mk(), mk()
			errFast := decodeValue([]byte(raw), a)
			errSlow := json.Unmarshal([]byte(raw), b)
			if fmt.Sprint(errFast) != fmt.Sprint(errSlow) || !reflect.DeepEqual(a, b) {
				t.Errorf("%s into %T: fast (%v, %v), json (%v, %v)", raw, a, reflect.ValueOf(a).Elem(), errFast, reflect.ValueOf(b).Elem(), errSlow)
			}
		}
	}
	// A nil pointer: encoding/json's error, not a call.
	var addr *common.Address
	if err := decodeValue([]byte(`"0x1"`), addr); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("nil target: %v", err)
	}
}

// FuzzDecodeValue: for any input, decodeValue and json.Unmarshal agree on
// the value and the error (the plain-string shortcut skips json.Valid).
func FuzzDecodeValue(f *testing.F) {
	for _, seed := range []string{`"0x00000000000000000000000000000000000000aa"`, `"0x1"`, `"latest"`, ` "0x1" `, `"a\"b"`, `"\u0041"`, `"0x1`, `1`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, mk := range []func() any{
			func() any { return new(common.Address) },
			func() any { return new(hexutil.Big) },
			func() any { return new(textOnly) },
		} {
			a, b := mk(), mk()
			errFast := decodeValue([]byte(raw), a)
			errSlow := json.Unmarshal([]byte(raw), b)
			if fmt.Sprint(errFast) != fmt.Sprint(errSlow) || !reflect.DeepEqual(a, b) {
				t.Errorf("%q into %T: fast (%v, %v), json (%v, %v)", raw, a, reflect.ValueOf(a).Elem(), errFast, reflect.ValueOf(b).Elem(), errSlow)
			}
		}
	})
}

type textVal string

func (t textVal) MarshalText() ([]byte, error) { return []byte(t), nil }

type bothVal string

func (b bothVal) MarshalText() ([]byte, error) { return []byte("text"), nil }
func (b bothVal) MarshalJSON() ([]byte, error) { return []byte(`{"json":true}`), nil }

type failText struct{}

func (failText) MarshalText() ([]byte, error) { return nil, errors.New("no text") }

// Results written by appendText are byte-for-byte encoding/json's.
func TestAppendTextMatchesMarshal(t *testing.T) {
	var nilBig *hexutil.Big
	for _, v := range []any{
		hexutil.Uint64(0), hexutil.Uint64(0x1234), hexutil.Uint(7), (*hexutil.Big)(big.NewInt(1337)), nilBig,
		common.HexToHash("0xabc"), common.HexToAddress("0x00000000000000000000000000000000000000aa"),
		hexutil.Bytes{}, hexutil.Bytes{1, 2, 3}, textVal("plain"), textVal("a<b"), textVal(`q"`), textVal("é"),
		textVal(""), bothVal("x"), failText{}, 5, "s", true, []int{1},
	} {
		var fast bytes.Buffer
		ok := appendText(&fast, v)
		want, err := json.Marshal(v)
		if !ok {
			if fast.Len() != 0 {
				t.Errorf("%T %v: wrote %q without taking it", v, v, fast.Bytes())
			}
			continue
		}
		if err != nil || fast.String() != string(want) {
			t.Errorf("%T %v: %s, encoding/json %s (%v)", v, v, fast.Bytes(), want, err)
		}
	}
	// The common result types do take the fast path.
	for _, v := range []any{hexutil.Uint64(1), common.Hash{}, (*hexutil.Big)(big.NewInt(1))} {
		if !appendText(new(bytes.Buffer), v) {
			t.Errorf("%T not taken", v)
		}
	}
}
