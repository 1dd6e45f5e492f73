package ethjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// Tag is a named block.
type Tag int

const (
	TagNone Tag = iota // a number or a hash
	TagLatest
	TagPending
	TagSafe
	TagFinalized
	TagEarliest
)

// BlockRef is a block selector: a tag, a number, or a hash (EIP-1898).
type BlockRef struct {
	Tag              Tag
	Number           uint64
	Hash             *common.Hash
	RequireCanonical bool
}

// Latest is the default selector.
var Latest = BlockRef{Tag: TagLatest}

func parseTag(s string) (Tag, bool) {
	switch s {
	case "latest":
		return TagLatest, true
	case "pending":
		return TagPending, true
	case "safe":
		return TagSafe, true
	case "finalized":
		return TagFinalized, true
	case "earliest":
		return TagEarliest, true
	}
	return TagNone, false
}

// UnmarshalJSON accepts a tag, a hex number, a 32-byte hash, or the EIP-1898
// object {"blockHash", "requireCanonical"} / {"blockNumber"}.
func (r *BlockRef) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '{' {
		var obj struct {
			BlockNumber      *json.RawMessage `json:"blockNumber"`
			BlockHash        *common.Hash     `json:"blockHash"`
			RequireCanonical bool             `json:"requireCanonical"`
		}
		if err := json.Unmarshal(data, &obj); err != nil {
			return err
		}
		switch {
		case obj.BlockNumber != nil && obj.BlockHash != nil:
			return errors.New("cannot specify both BlockHash and BlockNumber, choose one or the other")
		case obj.BlockHash != nil:
			*r = BlockRef{Hash: obj.BlockHash, RequireCanonical: obj.RequireCanonical}
			return nil
		case obj.BlockNumber != nil:
			var n BlockNumber
			if err := json.Unmarshal(*obj.BlockNumber, &n); err != nil {
				return err
			}
			*r = BlockRef(n)
			return nil
		}
		return errors.New("must specify either BlockHash or BlockNumber")
	}
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return fmt.Errorf("invalid block selector %s: want a tag, a hex number or a block hash", truncate(data))
	}
	s := string(data[1 : len(data)-1])
	if t, ok := parseTag(s); ok {
		*r = BlockRef{Tag: t}
		return nil
	}
	if len(s) == 66 {
		var h common.Hash
		if err := h.UnmarshalText([]byte(s)); err != nil {
			return err
		}
		*r = BlockRef{Hash: &h}
		return nil
	}
	n, err := hexutil.DecodeUint64(s)
	if err != nil {
		return err
	}
	if n > math.MaxInt64 {
		return errors.New("blocknumber too high")
	}
	*r = BlockRef{Number: n}
	return nil
}

// BlockNumber is a selector without hashes (eth_getBlockByNumber & co.).
type BlockNumber BlockRef

// UnmarshalJSON accepts a tag or a hex number.
func (n *BlockNumber) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return fmt.Errorf("invalid block number %s", truncate(data))
	}
	s := string(data[1 : len(data)-1])
	if t, ok := parseTag(s); ok {
		*n = BlockNumber{Tag: t}
		return nil
	}
	v, err := hexutil.DecodeUint64(s)
	if err != nil {
		return err
	}
	if v > math.MaxInt64 {
		return errors.New("block number larger than int64")
	}
	*n = BlockNumber{Number: v}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}
