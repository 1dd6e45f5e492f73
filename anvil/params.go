package anvil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/rpc"
)

// Parameters as anvil reads them: a number is a JSON number, a hex
// quantity or a decimal string ("0x10", "16", 16); a wrong type or count is
// -32602, as anvil answers.

// args checks the parameter count: exactly n, the last opt of them
// optional.
func args(p rpc.Params, n, opt int) error {
	if p.Len() > n {
		return rpc.InvalidParams("invalid length %d, expected %d parameters", p.Len(), n)
	}
	for i := 0; i < n-opt; i++ {
		if !p.Present(i) {
			return rpc.InvalidParams("invalid length %d, expected %d parameters", p.Len(), n-opt)
		}
	}
	return nil
}

func address(p rpc.Params, i int) (common.Address, error) {
	var a common.Address
	err := p.Required(i, &a)
	return a, err
}

func hash(p rpc.Params, i int) (common.Hash, error) {
	var h common.Hash
	err := p.Required(i, &h)
	return h, err
}

// number reads parameter i as an unsigned 256-bit number.
func number(p rpc.Params, i int) (*uint256.Int, error) {
	if !p.Present(i) {
		return nil, rpc.InvalidParams("missing value for required argument %d", i)
	}
	v, err := parseNumber(p[i])
	if err != nil {
		return nil, rpc.InvalidParams("invalid argument %d: %v", i, err)
	}
	return v, nil
}

// number64 reads parameter i as a number that fits 64 bits.
func number64(p rpc.Params, i int) (uint64, error) {
	v, err := number(p, i)
	if err != nil {
		return 0, err
	}
	if !v.IsUint64() {
		return 0, rpc.InvalidParams("invalid argument %d: %v does not fit 64 bits", i, v.Dec())
	}
	return v.Uint64(), nil
}

func parseNumber(raw json.RawMessage) (*uint256.Int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' { // anvil's NumericSeq: [n]
		var seq []json.RawMessage
		if err := json.Unmarshal(raw, &seq); err != nil || len(seq) != 1 {
			return nil, fmt.Errorf("want a number or a list of one number, got %s", raw)
		}
		return parseNumber(seq[0])
	}
	var s string
	if len(raw) > 0 && raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
	} else {
		s = string(raw)
		if strings.ContainsAny(s, ".eE-") {
			return nil, fmt.Errorf("want a non-negative integer, got %s", raw)
		}
	}
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		digits := strings.TrimLeft(s[2:], "0") // anvil accepts leading zeros
		if digits == "" && len(s) > 2 {
			digits = "0"
		}
		v, err := uint256.FromHex("0x" + digits)
		if err != nil {
			return nil, fmt.Errorf("invalid hex quantity %q: %v", s, err)
		}
		return v, nil
	}
	b, ok := new(big.Int).SetString(s, 10)
	if !ok || b.Sign() < 0 {
		return nil, fmt.Errorf("want a number, got %q", s)
	}
	v, overflow := uint256.FromBig(b)
	if overflow {
		return nil, fmt.Errorf("%s is above 2^256-1", s)
	}
	return v, nil
}

// bytesParam reads hex bytes, with or without 0x (anvil takes both).
func bytesParam(p rpc.Params, i int) ([]byte, error) {
	var s string
	if err := p.Required(i, &s); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		s = "0x" + s
	}
	b, err := hexutil.Decode(s)
	if err != nil {
		return nil, rpc.InvalidParams("invalid argument %d: %v", i, err)
	}
	return b, nil
}

func boolParam(p rpc.Params, i int) (bool, error) {
	var b bool
	err := p.Required(i, &b)
	return b, err
}
