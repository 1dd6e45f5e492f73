package fork

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/params"
)

// ErrForkMismatch reports a datadir that holds another fork (or another
// kind of chain) than the flags ask for.
var ErrForkMismatch = errors.New("datadir holds a different fork")

// meta is a fork's identity, written once when the datadir is created: the
// upstream chain and block it forked and the rules it runs by. A restart
// takes the fork block from here (not from the upstream's head again).
type meta struct {
	UpstreamChainID uint64              `json:"upstreamChainId"`
	Number          uint64              `json:"forkBlockNumber"`
	Hash            common.Hash         `json:"forkBlockHash"`
	Genesis         common.Hash         `json:"upstreamGenesis"`
	Rules           string              `json:"rules"` // where Config came from (config.go)
	Config          *params.ChainConfig `json:"config"`
}

func readMeta(db ethdb.KeyValueReader) (*meta, error) {
	raw, err := db.Get(metaKey)
	if err != nil || len(raw) == 0 {
		return nil, nil // a new datadir
	}
	m := new(meta)
	if err := json.Unmarshal(raw, m); err != nil {
		return nil, fmt.Errorf("fork identity in the datadir: %w", err)
	}
	if m.Config == nil || m.Config.ChainID == nil {
		return nil, errors.New("fork identity in the datadir has no chain config")
	}
	return m, nil
}

func writeMeta(db ethdb.KeyValueWriter, m *meta) error {
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return db.Put(metaKey, raw)
}

// check refuses flags that ask for another fork than the datadir's.
func (m *meta) check(cfg *Config) error {
	point := fmt.Sprintf("chain %d at block %d (%s)", m.UpstreamChainID, m.Number, m.Hash)
	if cfg.Block != nil && *cfg.Block != m.Number {
		return fmt.Errorf("%w: it forked %s, --fork-block-number asks for block %d (use another --datadir)", ErrForkMismatch, point, *cfg.Block)
	}
	if cfg.ChainID != nil && *cfg.ChainID != m.Config.ChainID.Uint64() {
		return fmt.Errorf("%w: it forked %s as chain id %d, --chain-id asks for %d (use another --datadir)", ErrForkMismatch, point, m.Config.ChainID, *cfg.ChainID)
	}
	if cfg.Genesis != nil {
		want, _ := json.Marshal(rulesOf(cfg.Genesis.Config, m.Config.ChainID))
		have, _ := json.Marshal(m.Config)
		if string(want) != string(have) {
			return fmt.Errorf("%w: it forked %s with other chain rules than --genesis gives (use another --datadir)", ErrForkMismatch, point)
		}
	}
	return nil
}
