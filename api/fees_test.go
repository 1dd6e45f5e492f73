package api

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/consensus/misc/eip1559"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
)

func TestTipSuggestion(t *testing.T) {
	f := newReadsFixture(t)
	a := f.api
	// Every sampled block holds two transactions tipping readsTip.
	if got, want := mustCall(t, a.maxPriorityFeePerGas), string(ethjson.AppendBig(nil, readsTip)); got != want {
		t.Errorf("maxPriorityFeePerGas = %s, want %s", got, want)
	}
	head := f.chain.Head()
	if got, want := mustCall(t, a.gasPrice), string(ethjson.AppendBig(nil, new(big.Int).Add(readsTip, head.BaseFee))); got != want {
		t.Errorf("gasPrice = %s, want %s", got, want)
	}
	// The next block's base fee.
	if got, want := mustCall(t, a.baseFee), string(ethjson.AppendBig(nil, eip1559.CalcBaseFee(f.chain.Config(), head, head.Time+1))); got != want {
		t.Errorf("baseFee = %s, want %s", got, want)
	}
	if got := mustCall(t, a.blobBaseFee); got != `"0x1"` {
		t.Errorf("blobBaseFee = %s", got)
	}
}

func TestFeeHistory(t *testing.T) {
	f := newReadsFixture(t)
	a := f.api
	var res struct {
		OldestBlock   string     `json:"oldestBlock"`
		Reward        [][]string `json:"reward"`
		BaseFee       []string   `json:"baseFeePerGas"`
		GasUsedRatio  []float64  `json:"gasUsedRatio"`
		BlobBaseFee   []string   `json:"baseFeePerBlobGas"`
		BlobUsedRatio []float64  `json:"blobGasUsedRatio"`
	}
	decode := func(out string) {
		t.Helper()
		res.Reward, res.BaseFee, res.GasUsedRatio = nil, nil, nil
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
	}
	decode(mustCall(t, a.feeHistory, `"0x2"`, `"latest"`, `[25,75]`))
	tip := string(ethjson.AppendBig(nil, readsTip))
	if res.OldestBlock != "0x3" || len(res.BaseFee) != 3 || len(res.GasUsedRatio) != 2 || len(res.Reward) != 2 || len(res.BlobBaseFee) != 3 {
		t.Fatalf("shape: %+v", res)
	}
	if quoted(res.Reward[1][1]) != tip {
		t.Errorf("reward = %v, want %s", res.Reward, tip)
	}
	if want := string(ethjson.AppendBig(nil, f.blocks[3].BaseFee())); quoted(res.BaseFee[1]) != want {
		t.Errorf("baseFee[1] = %s, want block 4's %s", res.BaseFee[1], want)
	}
	if want := string(ethjson.AppendBig(nil, eip1559.CalcBaseFee(f.chain.Config(), f.chain.Head(), f.chain.Head().Time+1))); quoted(res.BaseFee[2]) != want {
		t.Errorf("next base fee = %s, want %s", res.BaseFee[2], want)
	}
	if r := res.GasUsedRatio[1]; r <= 0 || r >= 1 {
		t.Errorf("gasUsedRatio = %v", r)
	}
	// Decimal counts, capping at the chain's length, no percentiles.
	decode(mustCall(t, a.feeHistory, `100`, `"0x4"`, `null`))
	if res.OldestBlock != "0x0" || len(res.GasUsedRatio) != 5 || res.Reward != nil {
		t.Errorf("capped history: %+v", res)
	}
	if got := mustCall(t, a.feeHistory, `"0x0"`, `"latest"`, `[]`); got != `{"oldestBlock":"0x0","gasUsedRatio":null}` {
		t.Errorf("empty history = %s", got)
	}
	// With a snapshot, pending is the block after the head.
	f.publishPending(t)
	decode(mustCall(t, a.feeHistory, `"0x1"`, `"pending"`, `[50]`))
	if res.OldestBlock != "0x5" || res.BaseFee[0] != "0x7" {
		t.Errorf("pending history: %+v", res)
	}
	for _, tc := range []struct {
		params []string
		code   int
		msg    string
	}{
		{[]string{`"0x1"`, `"latest"`, `[50,10]`}, rpc.CodeServer, "invalid reward percentile"},
		{[]string{`"0x1"`, `"latest"`, `[101]`}, rpc.CodeServer, "invalid reward percentile"},
		{[]string{`"0x1"`, `"0x9"`, `[]`}, rpc.CodeServer, "request beyond head block"},
		{[]string{`"0x1"`}, rpc.CodeInvalidParams, "missing value"},
		{[]string{`"0x1"`, `"latest"`}, rpc.CodeInvalidParams, "missing value for required argument 2"},
		{[]string{`"x"`, `"latest"`, `[]`}, rpc.CodeInvalidParams, ""},
	} {
		_, err := call(t, a.feeHistory, tc.params...)
		var re rpc.Error
		if !errors.As(err, &re) || re.ErrorCode() != tc.code || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: %v; want %d %q", tc.params, err, tc.code, tc.msg)
		}
	}
}
