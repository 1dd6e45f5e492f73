package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
)

func TestLogFilterDecoding(t *testing.T) {
	a1 := "0x00000000000000000000000000000000000000a1"
	a2 := "0x00000000000000000000000000000000000000a2"
	t1 := "0x0000000000000000000000000000000000000000000000000000000000000001"
	t2 := "0x0000000000000000000000000000000000000000000000000000000000000002"
	h1, h2 := common.HexToHash(t1), common.HexToHash(t2)
	tests := []struct {
		in      string
		err     string // substring of the expected error
		addrs   int
		topics  [][]common.Hash
		hasHash bool
	}{
		{in: `{}`},
		{in: `{"address":"` + a1 + `"}`, addrs: 1},
		{in: `{"address":["` + a1 + `","` + a2 + `"]}`, addrs: 2},
		{in: `{"address":null}`},
		{in: `{"address":[]}`},
		{in: `{"address":5}`, err: "invalid addresses in query"},
		{in: `{"address":[5]}`, err: "non-string address at index 0"},
		{in: `{"address":["0x12"]}`, err: "invalid address at index 0: hex has invalid length 1 after decoding; expected 20 for address"},
		{in: `{"address":"a1"}`, err: "invalid address: hex string without 0x prefix"},
		{in: `{"topics":[null,"` + t1 + `"]}`, topics: [][]common.Hash{nil, {h1}}},
		{in: `{"topics":[["` + t1 + `","` + t2 + `"]]}`, topics: [][]common.Hash{{h1, h2}}},
		{in: `{"topics":[["` + t1 + `",null]]}`, topics: [][]common.Hash{nil}}, // a null alternative matches all
		{in: `{"topics":[[]]}`, topics: [][]common.Hash{nil}},
		{in: `{"topics":[1]}`, err: "invalid topic(s)"},
		{in: `{"topics":[[1]]}`, err: "invalid topic(s)"},
		{in: `{"topics":["0x01"]}`, err: "expected 32 for topic"},
		{in: `{"topics":[null,null,null,null,null]}`, err: "exceed max topics"},
		{in: `{"topics":[[` + strings.Repeat(`"`+t1+`",`, 1000) + `"` + t1 + `"]]}`, err: "exceed max topics"},
		{in: `{"blockHash":"` + t1 + `"}`, hasHash: true},
		{in: `{"blockHash":"` + t1 + `","toBlock":"latest"}`, err: "cannot specify both BlockHash and FromBlock/ToBlock"},
		{in: `{"fromBlock":"0x1","toBlock":"pending"}`},
		{in: `{"fromBlock":"1"}`, err: "hex string without 0x prefix"},
		{in: `[]`, err: "cannot unmarshal"},
	}
	for _, tc := range tests {
		t.Run(tc.in[:min(len(tc.in), 60)], func(t *testing.T) {
			var f LogFilter
			err := json.Unmarshal([]byte(tc.in), &f)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Addresses) != tc.addrs {
				t.Errorf("addresses %v, want %d", f.Addresses, tc.addrs)
			}
			if fmt.Sprint(f.Topics) != fmt.Sprint(tc.topics) {
				t.Errorf("topics %v, want %v", f.Topics, tc.topics)
			}
			if (f.BlockHash != nil) != tc.hasHash {
				t.Errorf("blockHash %v", f.BlockHash)
			}
		})
	}
}

func TestLogFilterMatching(t *testing.T) {
	a, b := common.Address{0xa}, common.Address{0xb}
	x, y, z := common.Hash{1}, common.Hash{2}, common.Hash{3}
	log := &types.Log{Address: a, Topics: []common.Hash{x, y}}
	tests := []struct {
		f    LogFilter
		want bool
	}{
		{LogFilter{}, true},
		{LogFilter{Addresses: []common.Address{b, a}}, true},
		{LogFilter{Addresses: []common.Address{b}}, false},
		{LogFilter{Topics: [][]common.Hash{{x}}}, true},
		{LogFilter{Topics: [][]common.Hash{nil, {z, y}}}, true},
		{LogFilter{Topics: [][]common.Hash{{y}}}, false},
		{LogFilter{Topics: [][]common.Hash{nil, nil, nil}}, false}, // more positions than the log has
		{LogFilter{Addresses: []common.Address{a}, Topics: [][]common.Hash{{x}, {z}}}, false},
	}
	bloom := types.CreateBloom(&types.Receipt{Logs: []*types.Log{log}})
	for i, tc := range tests {
		if got := tc.f.matches(log); got != tc.want {
			t.Errorf("%d: matches = %v, want %v", i, got, tc.want)
		}
		// The bloom may report false positives, never false negatives.
		if tc.want && !tc.f.mayMatch(bloom) {
			t.Errorf("%d: bloom rejects a matching log", i)
		}
	}
	if (&LogFilter{Addresses: []common.Address{b}}).mayMatch(bloom) {
		t.Error("bloom matches an absent address")
	}
}

// logsOf decodes an eth_getLogs answer.
func logsOf(t *testing.T, out string) []map[string]json.RawMessage {
	t.Helper()
	var logs []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &logs); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return logs
}

func TestGetLogs(t *testing.T) {
	f := newReadsFixture(t)
	a := f.api
	w := func(i int) string { return quoted(emitWord(i).Hex()) }
	em := quoted(emitter.Hex())
	tests := []struct {
		name   string
		filter string
		words  []string // expected log topics[1], in order
		code   int
		msg    string
	}{
		{"all", `{"fromBlock":"0x1","toBlock":"latest"}`, []string{w(1), w(2), w(3), w(4)}, 0, ""},
		{"default range is latest", `{}`, []string{w(4)}, 0, ""},
		{"earliest to 0x2", `{"fromBlock":"earliest","toBlock":"0x2"}`, []string{w(1), w(2)}, 0, ""},
		{"address", `{"fromBlock":"0x1","address":` + em + `}`, []string{w(1), w(2), w(3), w(4)}, 0, ""},
		{"other address", `{"fromBlock":"0x1","address":["` + testTo.Hex() + `"]}`, nil, 0, ""},
		{"topic OR", `{"fromBlock":"0x1","topics":[null,[` + w(2) + `,` + w(4) + `]]}`, []string{w(2), w(4)}, 0, ""},
		{"exact", `{"fromBlock":"0x1","topics":["` + topicEmit.Hex() + `",` + w(3) + `]}`, []string{w(3)}, 0, ""},
		{"too many positions", `{"fromBlock":"0x1","topics":[null,null,null]}`, nil, 0, ""},
		{"safe and finalized", `{"fromBlock":"safe","toBlock":"finalized"}`, []string{w(4)}, 0, ""},
		{"reversed", `{"fromBlock":"0x3","toBlock":"0x2"}`, nil, rpc.CodeInvalidParams, "invalid block range params"},
		{"from beyond head", `{"fromBlock":"0x9"}`, nil, rpc.CodeInvalidParams, "invalid block range params"},
		{"to beyond head", `{"fromBlock":"0x1","toBlock":"0x9"}`, nil, rpc.CodeInvalidParams, "block range extends beyond current head block"},
		{"pending is latest without snapshot", `{"fromBlock":"0x4","toBlock":"pending"}`, []string{w(4)}, 0, ""},
		{"unknown block hash", `{"blockHash":"` + common.Hash{1}.Hex() + `"}`, nil, rpc.CodeServer, "unknown block"},
		{"hash with range", `{"blockHash":"` + common.Hash{1}.Hex() + `","fromBlock":"0x1"}`, nil, rpc.CodeInvalidParams, ""},
		{"too many topics", `{"topics":[null,null,null,null,null]}`, nil, rpc.CodeInvalidParams, "exceed max topics"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := call(t, a.getLogs, tc.filter)
			if tc.code != 0 {
				var re rpc.Error
				if !errors.As(err, &re) || re.ErrorCode() != tc.code || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("got %s, %v; want error %d %q", out, err, tc.code, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			logs := logsOf(t, out)
			if len(logs) != len(tc.words) {
				t.Fatalf("%d logs, want %d: %s", len(logs), len(tc.words), out)
			}
			for i, l := range logs {
				var topics []string
				json.Unmarshal(l["topics"], &topics)
				if quoted(topics[1]) != tc.words[i] {
					t.Errorf("log %d: topic %s, want %s", i, topics[1], tc.words[i])
				}
			}
		})
	}
	// By block hash: the same logs as by number, with full location.
	b3 := f.blocks[2]
	byHash := mustCall(t, a.getLogs, `{"blockHash":"`+b3.Hash().Hex()+`"}`)
	byNum := mustCall(t, a.getLogs, `{"fromBlock":"0x3","toBlock":"0x3"}`)
	if byHash != byNum {
		t.Errorf("by hash and by number differ:\n%s\n%s", byHash, byNum)
	}
	l := logsOf(t, byHash)[0]
	for k, want := range map[string]string{
		"blockHash": quoted(b3.Hash().Hex()), "blockNumber": `"0x3"`, "transactionHash": quoted(b3.Transactions()[0].Hash().Hex()),
		"blockTimestamp": string(ethjson.AppendU64(nil, b3.Time())), "data": quoted(emitWord(3).Hex()),
	} {
		if string(l[k]) != want {
			t.Errorf("%s = %s, want %s", k, l[k], want)
		}
	}
	if _, err := call(t, a.getLogs, `{"address":[`+strings.Repeat(em+",", 1000)+em+`]}`); err == nil || !strings.Contains(err.Error(), "exceed max addresses") {
		t.Errorf("1001 addresses: %v", err)
	}
}

func TestGetLogsPending(t *testing.T) {
	f := newReadsFixture(t)
	a := f.api
	snap, tx := f.publishPending(t)
	pendingHash := snap.Block().Hash().Hex()

	logs := logsOf(t, mustCall(t, a.getLogs, `{"fromBlock":"0x4","toBlock":"pending"}`))
	if len(logs) != 2 {
		t.Fatalf("%d logs, want the head's and the pending one", len(logs))
	}
	p := logs[1]
	for k, want := range map[string]string{"blockHash": quoted(pendingHash), "blockNumber": `"0x5"`, "transactionHash": quoted(tx.Hash().Hex())} {
		if string(p[k]) != want {
			t.Errorf("pending log %s = %s, want %s", k, p[k], want)
		}
	}
	only := logsOf(t, mustCall(t, a.getLogs, `{"fromBlock":"pending","toBlock":"pending"}`))
	if len(only) != 1 {
		t.Errorf("pending only: %d logs", len(only))
	}
	// Latest excludes the pre-confirmed logs; filters apply to them too.
	if n := len(logsOf(t, mustCall(t, a.getLogs, `{"fromBlock":"0x1"}`))); n != 4 {
		t.Errorf("latest range: %d logs", n)
	}
	if n := len(logsOf(t, mustCall(t, a.getLogs, `{"fromBlock":"pending","toBlock":"pending","address":"`+testTo.Hex()+`"}`))); n != 0 {
		t.Errorf("address filter on pending logs: %d logs", n)
	}
	if _, err := call(t, a.getLogs, `{"fromBlock":"pending","toBlock":"latest"}`); err == nil {
		t.Error("pending..latest: want invalid block range")
	}
}
