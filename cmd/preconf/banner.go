package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/urfave/cli/v2"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/sequencer"
)

// isDevChain reports whether n runs a built-in dev chain, the accounts of
// which are worth printing: a fork (it funds the dev accounts,
// node.Config.Fork), the OP-stack dev chain (no --genesis, and a datadir
// holding its genesis, not one created with --genesis earlier) or with --l1
// the plain-Ethereum one.
func isDevChain(genesisFlag string, l1 bool, n *node.Node) bool {
	switch {
	case n.Fork != nil:
		return true
	case genesisFlag != "":
		return false
	case l1:
		return true // chain.Open refused any other genesis
	}
	_, ok := chain.DevL2HardforkOf(n.Chain.Genesis().Hash())
	return ok
}

// devL2Hardfork is the built-in OP-stack dev chain at the fork named s.
func devL2Hardfork(s string) (*core.Genesis, error) {
	f, err := forkrules.ParseFork(s)
	if err == nil && slices.Contains(chain.DevL2Hardforks, f) {
		return chain.DevL2GenesisAt(f)
	}
	return nil, fmt.Errorf("--hardfork %q: the dev chain runs isthmus, jovian or karst", s)
}

// devChainID applies --chain-id to a built-in dev chain (the OP-stack one,
// at --hardfork, or --l1's), as anvil's --chain-id: a chain id is no part of
// the genesis block, so the chain and its datadir stay the same.
func devChainID(c *cli.Context, cfg *node.Config) error {
	if !c.IsSet("chain-id") || cfg.Fork != nil {
		return nil
	}
	id := c.Uint64("chain-id")
	switch {
	case id == 0:
		return errors.New("--chain-id must not be 0")
	case c.String("genesis") != "":
		return errors.New("--chain-id sets a fork's or a built-in dev chain's id; a --genesis file has its own")
	case cfg.Genesis == nil:
		g, err := chain.DevL2Genesis()
		if err != nil {
			return err
		}
		cfg.Genesis = g
	}
	cfg.Genesis.Config.ChainID = new(big.Int).SetUint64(id)
	return nil
}

// forksLine names the OP forks active at the head, and the next scheduled.
func forksLine(cfg *params.ChainConfig, head *types.Header) string {
	active := forkrules.Latest(cfg, head.Time)
	line := fmt.Sprintf("Bedrock through %s", active)
	for _, a := range forkrules.Schedule(cfg) {
		if a.Time > head.Time {
			line += fmt.Sprintf("; %s at time %d", a.Fork, a.Time)
			break
		}
	}
	return line
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
	section("Chain")
	fmt.Fprintf(&b, "Chain ID:          %d\n", c.Config().ChainID)
	switch op := c.Config().Optimism != nil; {
	case n.Fork != nil && op:
		fmt.Fprintf(&b, "Kind:              a fork of an OP-stack chain, by its rules; local blocks carry no L1-attributes deposit (L1 fees from the fork block's L1Block values)\n"+
			"Forks:             %s\n", forksLine(c.Config(), head))
	case n.Fork != nil:
	case op:
		l1 := sequencer.DefaultL1BlockTime
		if cfg.Sequencer != nil && cfg.Sequencer.L1BlockTime != 0 {
			l1 = cfg.Sequencer.L1BlockTime
		}
		fmt.Fprintf(&b, "Kind:              OP-stack L2 as the chains that pre-confirm run it (--hardfork for older rules, --l1 for plain Ethereum)\n"+
			"Forks:             %s\n"+
			"L1:                simulated, a block every %v; every L2 block opens with its L1-attributes deposit\n"+
			"Fees:              base fee and tip, plus the L1 data fee (receipts' l1Fee; GasPriceOracle at 0x4200…000F)\n"+
			"Deposits:          eth_sendTransaction {from, to, value, gas, mint} (anvil --optimism's fields)\n", forksLine(c.Config(), head), l1)
	default:
		fmt.Fprintf(&b, "Kind:              plain Ethereum (--l1), every fork through Osaka\n")
	}
	section("Blocks")
	fmt.Fprintf(&b, "Head:              block %d\nGas limit:         %d\n", head.Number, head.GasLimit)
	switch seq := cfg.Sequencer; {
	case seq != nil && seq.Mining == sequencer.IntervalMining:
		fmt.Fprintf(&b, "Pre-confirmed:     a flashblock every %v (read it at \"pending\")\nSealed:            a block every %v (\"latest\")\n",
			cmp.Or(seq.Interval, sequencer.DefaultInterval), cmp.Or(seq.BlockTime, sequencer.DefaultBlockTime))
	case seq != nil && seq.Mining == sequencer.AutoMining:
		fmt.Fprintf(&b, "Sealed:            a block per transaction (--automine)\n")
	default:
		fmt.Fprintf(&b, "Sealed:            never (--block-time 0)\n")
	}
	section("Endpoints")
	fmt.Fprintf(&b, "Page:              %s/ (open it in a browser: status, the wallet's approvals, add this network)\n", n.URL())
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
