package node

import (
	"fmt"
	"math/big"
	"os"
	"path/filepath"

	"github.com/ethereum/go-ethereum/common"

	"github.com/preconf/preconf/api"
	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/fork"
)

// A datadir holds one kind of chain: a local one in chaindata, or a fork in
// forkdata (the sequencer's log beside them belongs to that chain).
const (
	localDir = "chaindata"
	forkDir  = "forkdata"
)

// openChain opens the node's chain, local or forked, and returns it as the
// methods read it.
func (n *Node) openChain() (api.Backend, error) {
	cfg := n.cfg
	if cfg.Fork != nil {
		if err := exclusive(cfg.DataDir, localDir, "a local chain", "a fork"); err != nil {
			return nil, err
		}
		fc := *cfg.Fork
		fc.Dir, fc.Logger = cfg.DataDir, n.log
		if fc.Genesis == nil {
			fc.Genesis = cfg.Genesis
		}
		if fc.Fund == nil { // as anvil does on a fork: the dev accounts hold what the dev chain gives them
			fc.Fund = devFunds()
		}
		f, err := fork.Open(fc)
		if err != nil {
			return nil, err
		}
		n.Fork, n.below, n.events = f, fork.Sequencing{Chain: f}, f
		n.OnClose(f.Close)
		return f, nil
	}
	if err := exclusive(cfg.DataDir, forkDir, "a fork", "a local chain"); err != nil {
		return nil, err
	}
	c, err := chain.Open(chain.Config{Dir: cfg.DataDir, Genesis: cfg.Genesis, Logger: n.log})
	if err != nil {
		return nil, err
	}
	n.Chain, n.below, n.events = c, c, c.BlockChain()
	n.OnClose(c.Close)
	for _, f := range cfg.Imports {
		res, err := c.ImportFile(f)
		if err != nil {
			return nil, err
		}
		n.log.Info("import done", "file", f, "imported", res.Imported, "skipped", res.Skipped, "head", c.Head().Number)
	}
	return api.Local(c), nil
}

// devFunds are the dev accounts' balances on the dev chain.
func devFunds() map[common.Address]*big.Int {
	g := chain.DevGenesis()
	out := make(map[common.Address]*big.Int)
	for _, a := range chain.DevAccounts() {
		out[a] = new(big.Int).Set(g.Alloc[a].Balance)
	}
	return out
}

// exclusive refuses a datadir that holds the other kind of chain (other, in
// sub) for this one (kind).
func exclusive(dataDir, sub, other, kind string) error {
	if dataDir == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dataDir, sub)); err == nil {
		hint := "use another --datadir"
		if sub == forkDir {
			hint = "start it with --fork-url to resume the fork, or use another --datadir"
		}
		return fmt.Errorf("%w: %s holds %s, not %s (%s)", fork.ErrForkMismatch, dataDir, other, kind, hint)
	}
	return nil
}
