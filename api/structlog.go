package api

import (
	"bytes"
	"encoding/json"
	"strings"
)

// op-geth's struct logger (go-ethereum 1.17.2) writes storage keys and
// values and memory words as bare hex; go-ethereum from 1.17.5 and the
// execution-apis schema want them 0x-prefixed 32-byte words. gethStructLogs
// rewrites the logger's result into that form; logs without memory or
// storage are kept byte for byte.

// structLogResult is the struct logger's ExecutionResult, field order kept.
type structLogResult struct {
	Gas         uint64            `json:"gas"`
	Failed      bool              `json:"failed"`
	ReturnValue json.RawMessage   `json:"returnValue"`
	StructLogs  []json.RawMessage `json:"structLogs"`
}

// structLogEntry is one struct log, fields as the logger writes them.
type structLogEntry struct {
	Pc            uint64             `json:"pc"`
	Op            string             `json:"op"`
	Gas           uint64             `json:"gas"`
	GasCost       uint64             `json:"gasCost"`
	Depth         int                `json:"depth"`
	Error         string             `json:"error,omitempty"`
	Stack         *[]string          `json:"stack,omitempty"`
	ReturnData    string             `json:"returnData,omitempty"`
	Memory        *[]string          `json:"memory,omitempty"`
	Storage       *map[string]string `json:"storage,omitempty"`
	RefundCounter uint64             `json:"refund,omitempty"`
}

var (
	memoryKey  = []byte(`"memory":`)
	storageKey = []byte(`"storage":`)
)

// gethStructLogs converts a struct logger result (see above).
func gethStructLogs(raw json.RawMessage) (json.RawMessage, error) {
	if !bytes.Contains(raw, memoryKey) && !bytes.Contains(raw, storageKey) {
		return raw, nil
	}
	var res structLogResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	for i, l := range res.StructLogs {
		if !bytes.Contains(l, memoryKey) && !bytes.Contains(l, storageKey) {
			continue
		}
		var e structLogEntry
		if err := json.Unmarshal(l, &e); err != nil {
			return nil, err
		}
		if e.Memory != nil {
			for j, w := range *e.Memory {
				(*e.Memory)[j] = word(w)
			}
		}
		if e.Storage != nil {
			st := make(map[string]string, len(*e.Storage))
			for k, v := range *e.Storage {
				st[word(k)] = word(v)
			}
			e.Storage = &st
		}
		out, err := json.Marshal(&e)
		if err != nil {
			return nil, err
		}
		res.StructLogs[i] = out
	}
	return json.Marshal(&res)
}

// word is hex digits as a 0x-prefixed 32-byte word (right-padded, as
// go-ethereum pads a short memory chunk).
func word(s string) string {
	s = strings.TrimPrefix(s, "0x")
	if len(s) < 64 {
		s += strings.Repeat("0", 64-len(s))
	}
	return "0x" + s
}
