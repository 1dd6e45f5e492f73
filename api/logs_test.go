package api

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
)

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

// The range and result caps answer -32005 naming the limit; the result
// error suggests a range that fits.
func TestGetLogsLimits(t *testing.T) {
	f := newReadsFixture(t)
	a := f.api
	a.logLimits = LogLimits{MaxRange: 3, MaxResults: 2}
	for _, tc := range []struct{ filter, msg string }{
		{`{"fromBlock":"0x1","toBlock":"0x4"}`, "query exceeds max block range 3 (--rpc.getlogs-max-range)"},
		{`{"fromBlock":"0x1","toBlock":"0x3"}`, "query exceeds max results 2, retry with the range 1-2 (--rpc.getlogs-max-results)"},
	} {
		_, err := call(t, a.getLogs, tc.filter)
		var re rpc.Error
		if !errors.As(err, &re) || re.ErrorCode() != rpc.CodeLimitExceeded || err.Error() != tc.msg {
			t.Errorf("%s: %v, want -32005 %q", tc.filter, err, tc.msg)
		}
	}
	if out := mustCall(t, a.getLogs, `{"fromBlock":"0x1","toBlock":"0x2"}`); len(logsOf(t, out)) != 2 {
		t.Errorf("the suggested range: %s", out)
	}
}
