package main

import (
	"fmt"
	"io"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/node"
)

// isDevChain reports whether n runs the built-in dev chain: no --genesis,
// and a datadir holding the dev genesis (not one created with --genesis
// earlier). Only then are the dev keys worth printing.
func isDevChain(cfg node.Config, n *node.Node) bool {
	if n.Fork != nil {
		return true // a fork funds the dev accounts (node.Config.Fork)
	}
	return cfg.Genesis == nil && n.Chain.Genesis().Hash() == chain.DevGenesis().ToBlock().Hash()
}

// below is what the banner reads of the node's chain, local or forked.
type below interface {
	Config() *params.ChainConfig
	Head() *types.Header
	StateReader(root common.Hash) (state.Reader, error)
}

func belowOf(n *node.Node) below {
	if n.Fork != nil {
		return n.Fork
	}
	return n.Chain
}

// devBanner writes what anvil prints at start, for the dev chain: the
// accounts with their balances at the head, their private keys and where
// they come from, the chain id, how blocks are made, and where to connect.
func devBanner(w io.Writer, cfg node.Config, n *node.Node) error {
	c := belowOf(n)
	head := c.Head()
	st, err := c.StateReader(head.Root)
	if err != nil {
		return fmt.Errorf("state at head %d: %w", head.Number, err)
	}
	var b strings.Builder
	section := func(title string) { fmt.Fprintf(&b, "\n%s\n==================\n\n", title) }
	fmt.Fprintf(&b, "\npreconf %s, dev chain (datadir %s)\n", version, cfg.DataDir)
	if n.Fork != nil {
		p := n.Fork.ForkBlock()
		fmt.Fprintf(&b, "Forked:            %s at block %d (%s)\nRules:             %s\n", n.Fork.Upstream().Shown(), p.Number, p.Hash(), n.Fork.Rules())
	}
	section("Available Accounts")
	for i, addr := range chain.DevAccounts() {
		acct, err := st.Account(addr)
		if err != nil {
			return fmt.Errorf("account %s: %w", addr, err)
		}
		balance := new(big.Int)
		if acct != nil {
			balance = acct.Balance.ToBig()
		}
		fmt.Fprintf(&b, "(%d) %s (%s ETH)\n", i, addr.Hex(), ether(balance))
	}
	section("Private Keys")
	for i, k := range chain.DevKeys {
		fmt.Fprintf(&b, "(%d) 0x%s\n", i, k)
	}
	section("Wallet")
	fmt.Fprintf(&b, "Mnemonic:          %s\nDerivation path:   %s\n", chain.DevMnemonic, chain.DevDerivationPath)
	section("Chain ID")
	fmt.Fprintf(&b, "%d\n", c.Config().ChainID)
	section("Blocks")
	fmt.Fprintf(&b, "Head:              block %d\nGas limit:         %d\n", head.Number, head.GasLimit)
	if cfg.BlockTime > 0 {
		fmt.Fprintf(&b, "Pre-confirmed:     a flashblock every %v (read it at \"pending\")\nSealed:            a block every %v (\"latest\")\n",
			cfg.Sequencer.Interval, cfg.BlockTime)
	} else {
		fmt.Fprintf(&b, "Sealed:            never (--block-time 0)\n")
	}
	section("Endpoints")
	fmt.Fprintf(&b, "JSON-RPC:          %s\nWebsocket:         ws://%s\nFlashblocks feed:  ws://%s/flashblocks\n", n.URL(), n.Addr(), n.Addr())
	fmt.Fprintf(&b, "\nListening on %s\n\n", n.Addr())
	_, err = io.WriteString(w, b.String())
	return err
}

// ether formats wei as anvil does: ether with all 18 decimals.
func ether(wei *big.Int) string {
	q, r := new(big.Int).QuoRem(wei, big.NewInt(params.Ether), new(big.Int))
	return fmt.Sprintf("%s.%018s", q, r)
}
