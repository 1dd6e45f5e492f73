package ethjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
)

const (
	// maxTopics is the number of topic positions a log can have (LOG0–LOG4).
	maxTopics = 4
	// maxSubTopics caps the alternatives within one topic position.
	maxSubTopics = 1000
)

var (
	errInvalidTopic    = errors.New("invalid topic(s)")
	errExceedMaxTopics = errors.New("exceed max topics")
)

// LogFilter is eth_getLogs' filter object: a block range (fromBlock, toBlock;
// both default to latest) or a single blockHash, addresses (one or an array;
// none matches any) and topics (per position: null matches any, a hash
// matches it, an array matches any of its members).
type LogFilter struct {
	BlockHash *common.Hash
	FromBlock *BlockRef
	ToBlock   *BlockRef
	Addresses []common.Address
	Topics    [][]common.Hash
}

// UnmarshalJSON decodes the filter with go-ethereum's rules and messages.
func (f *LogFilter) UnmarshalJSON(data []byte) error {
	var raw struct {
		BlockHash *common.Hash `json:"blockHash"`
		FromBlock *BlockNumber `json:"fromBlock"`
		ToBlock   *BlockNumber `json:"toBlock"`
		Addresses any          `json:"address"`
		Topics    []any        `json:"topics"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*f = LogFilter{}
	if raw.BlockHash != nil {
		if raw.FromBlock != nil || raw.ToBlock != nil {
			return errors.New("cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other")
		}
		f.BlockHash = raw.BlockHash
	} else {
		if raw.FromBlock != nil {
			r := BlockRef(*raw.FromBlock)
			f.FromBlock = &r
		}
		if raw.ToBlock != nil {
			r := BlockRef(*raw.ToBlock)
			f.ToBlock = &r
		}
	}
	switch addrs := raw.Addresses.(type) {
	case nil:
	case []any:
		f.Addresses = make([]common.Address, 0, len(addrs))
		for i, v := range addrs {
			s, ok := v.(string)
			if !ok {
				return fmt.Errorf("non-string address at index %d", i)
			}
			addr, err := decodeFixedHex(s, common.AddressLength, "address")
			if err != nil {
				return fmt.Errorf("invalid address at index %d: %v", i, err)
			}
			f.Addresses = append(f.Addresses, common.BytesToAddress(addr))
		}
	case string:
		addr, err := decodeFixedHex(addrs, common.AddressLength, "address")
		if err != nil {
			return fmt.Errorf("invalid address: %v", err)
		}
		f.Addresses = []common.Address{common.BytesToAddress(addr)}
	default:
		return errors.New("invalid addresses in query")
	}
	if len(raw.Topics) > maxTopics {
		return errExceedMaxTopics
	}
	if len(raw.Topics) > 0 {
		f.Topics = make([][]common.Hash, len(raw.Topics))
	}
	for i, t := range raw.Topics {
		switch topic := t.(type) {
		case nil: // wildcard
		case string:
			h, err := decodeTopic(topic)
			if err != nil {
				return err
			}
			f.Topics[i] = []common.Hash{h}
		case []any:
			if len(topic) > maxSubTopics {
				return errExceedMaxTopics
			}
		alternatives:
			for _, alt := range topic {
				switch s := alt.(type) {
				case nil: // a null alternative matches anything
					f.Topics[i] = nil
					break alternatives
				case string:
					h, err := decodeTopic(s)
					if err != nil {
						return err
					}
					f.Topics[i] = append(f.Topics[i], h)
				default:
					return errInvalidTopic
				}
			}
		default:
			return errInvalidTopic
		}
	}
	return nil
}

func decodeFixedHex(s string, n int, what string) ([]byte, error) {
	b, err := hexutil.Decode(s)
	if err == nil && len(b) != n {
		err = fmt.Errorf("hex has invalid length %d after decoding; expected %d for %s", len(b), n, what)
	}
	return b, err
}

func decodeTopic(s string) (common.Hash, error) {
	b, err := decodeFixedHex(s, common.HashLength, "topic")
	return common.BytesToHash(b), err
}

// Matches reports whether a log satisfies the filter's address and topic
// criteria (the block range is not considered).
func (f *LogFilter) Matches(l *types.Log) bool {
	if len(f.Addresses) > 0 && !slices.Contains(f.Addresses, l.Address) {
		return false
	}
	if len(f.Topics) > len(l.Topics) {
		return false
	}
	for i, alts := range f.Topics {
		if len(alts) > 0 && !slices.Contains(alts, l.Topics[i]) {
			return false
		}
	}
	return true
}

// MayMatch reports whether a block with this bloom can hold a matching log.
func (f *LogFilter) MayMatch(bloom types.Bloom) bool {
	if len(f.Addresses) > 0 {
		found := false
		for _, addr := range f.Addresses {
			if types.BloomLookup(bloom, addr) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for _, alts := range f.Topics {
		if len(alts) == 0 {
			continue
		}
		found := false
		for _, t := range alts {
			if types.BloomLookup(bloom, t) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
