package ethjson

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
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
		if got := tc.f.Matches(log); got != tc.want {
			t.Errorf("%d: matches = %v, want %v", i, got, tc.want)
		}
		// The bloom may report false positives, never false negatives.
		if tc.want && !tc.f.MayMatch(bloom) {
			t.Errorf("%d: bloom rejects a matching log", i)
		}
	}
	if (&LogFilter{Addresses: []common.Address{b}}).MayMatch(bloom) {
		t.Error("bloom matches an absent address")
	}
}
